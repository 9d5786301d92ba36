"""Stage train_prm: one PRM per label source, in the Qwen2.5-Math-PRM layout.

The backbone is initialised from the policy (the paper starts from Qwen2.5-Math-7B-Instruct), the
head is new. Loss: cross-entropy on the `<extra_0>` positions with hard labels (the paper's final
recipe); for `mc_soft`, `soft_loss` (BCE or MSE on P(class 1) against the MC value). Only labelled
steps count. Trained by a plain PyTorch loop on packed batches (no padding); `train_prm.processes` or
`torchrun --nproc_per_node N -m stages.train_prm ...` trains data-parallel, `train_prm.fsdp` sharded (FSDP2).

Inputs: --train (PRMExample JSONL). Params: `train_prm`, `policy.model` (the base: a folder or hub name).
Core: prmlab.prms.training.train_prm.
Outputs: --out checkpoint folder, --metrics JSON.
Run: python -m stages.train_prm --source consensus --train data/prm_train/consensus.jsonl --out models/prm/consensus --metrics metrics/train_prm/consensus.json
(under `dvc repro`, stage train_prm@<source> names the source and the paths say `{source}`: no params string
reaches DVC's shell)
"""

from prmlab.core.stage import run_stage
from prmlab.engines.config import BackendConfig
from prmlab.prms.training import prepare_train, train_prm, train_worker
from prmlab.prms.training_config import TrainPRMConfig


def main() -> None:
    run_stage("train_prm@{source}", __doc__, paths={"source": "?label source (default: DVC's stage train_prm@<source>)", "train": "training examples JSONL",
                                                    "out": "checkpoint folder", "metrics": "metrics JSON"},
              sections={"train_prm": TrainPRMConfig, "policy": BackendConfig}, prepare=prepare_train, core=train_prm,
              worker=train_worker, inputs=["train"], torch=True)


if __name__ == "__main__":
    main()
