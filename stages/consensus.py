"""Stages consensus and prm_data@<source>: keep a sample only where MC and the judge agree on the
first error; write each label source's PRM training set in TRL's stepwise format, and the audit.

Sources: `mc_hard`, `mc_soft` (hard labels plus the MC value, for a regression loss), `judge`,
`consensus` (MC first error == judge first error; "no error" agreeing counts), and, where the
verifier's labels exist (toy world), `oracle`, the analogue of the paper's human-labelled PRM800K;
and the released sets named in params `human_labels` (`prm800k`, `math_shepherd`), which
human_data@<source> converted and deduplicated (--human folder), and the toy's `human` (toy_human@toy):
their training set is that file; and the newer methods' sources (`mc_agree`, `judge_ref`, `judge_active`), whose
labels stage label_method@<source> wrote (--methods folder): every response with a kept step label.

Two DVC stages run this module. `consensus` writes the agreement counts and the study's one audit of
label quality (--metrics, --audit-table). `prm_data@<source>`, one per entry of `train_prm.sources`,
builds and writes that source's training set alone (--source, --out): one file per source, so a PRM
retrains only when its own set changes. (`oracle` needs the verifier's labels: only the toy world has it.)

Inputs: --problems, --samples, --mc, --judge (--human, --methods). Params: `train_prm.sources`.
Core: prmlab.pipeline.training_sets.consensus, prmlab.pipeline.training_sets.prm_data (--source).
Outputs: --metrics JSON and --audit-table JSON, or --out JSONL (PRMExample) for --source.
Run: python -m stages.consensus --problems ... --samples ... --mc ... --judge ... --metrics metrics/consensus.json --audit-table reports/tables/label_audit.json
     python -m stages.consensus --problems ... --samples ... --mc ... --judge ... --source judge --out data/prm_train/judge.jsonl
(under `dvc repro`, stage prm_data@<source> names the source and --out says `{source}`: no params string
reaches DVC's shell)
"""

import sys

from prmlab.core.stage import foreach_key, run_stage
from prmlab.pipeline.training_sets import consensus, prepare_consensus, prm_data
from prmlab.prms.training_config import TrainPRMConfig


def main() -> None:
    # prm_data@<source> (--source, or DVC runs a prm_data@ stage): one training set; else stage consensus
    one_set = "--source" in sys.argv or foreach_key("prm_data") is not None
    outs = ({"source": "?one label source (default: DVC's stage prm_data@<source>)", "out": "its training set JSONL",
             "human": {"default": "data/human", "help": "folder of human_data@<source> outputs (prm800k, math_shepherd)"},
             "methods": {"default": "data/labels/methods", "help": "folder of label_method@<source> outputs (mc_agree, ...)"}}
            if one_set else {"metrics": "metrics JSON", "audit_table": "audit table JSON"})
    run_stage("prm_data@{source}" if one_set else "consensus", __doc__,
              paths={"problems": "problems JSONL", "samples": "responses JSONL", "mc": "MC labels JSONL",
                     "judge": "judge labels JSONL", **outs},
              sections={"train_prm": TrainPRMConfig}, prepare=prepare_consensus,
              core=prm_data if one_set else consensus, inputs=["samples", "mc", "judge"])


if __name__ == "__main__":
    main()
