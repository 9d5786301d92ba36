"""Stage label_mc: Monte Carlo step labels (hard and soft) for every sampled response.

For each step i, k rollouts continue from steps 0..i; soft = share reaching the gold answer, hard =
soft > threshold (paper: 0). The first hard-negative step is the MC first error; later steps are
not labelled. All rollouts of a shard go to the backend in one call, each distinct prefix once:
responses that share a prefix (or repeat one another) share its estimate (prefix caching does the rest);
shards are written atomically, so a killed run resumes without redoing or duplicating work.
`search` other than exhaustive (binary, scan, scan_binary: prmlab.pipeline.labeling) spends fewer rollouts and also
labels `compare_sample` responses exhaustively on the same draws, to report the rollouts it saves and
its agreement with exhaustive MC (first errors, step labels) and, on the toy, with the verifier.
Shards run where `engine.label_mc` says: this process, or warm replicas on a Ray cluster (same labels).
The labels' quality against the toy verifier is audited once, by stage consensus.

Inputs: --problems, --samples. Params: `label_mc`, `policy`, `engine` (not a DVC param). Core: prmlab.pipeline.labeling.label_mc.
Outputs: --out JSONL (MCLabel), --metrics JSON.
Run: python -m stages.label_mc --problems data/problems/train.jsonl --samples data/samples/train.jsonl --out data/labels/mc.jsonl --metrics metrics/label_mc.json
"""

from prmlab.core.stage import run_stage
from prmlab.engines.cluster import EngineConfig
from prmlab.engines.config import BackendConfig
from prmlab.pipeline.labeling import label_mc, prepare_mc
from prmlab.pipeline.labeling_config import LabelMCConfig


def main() -> None:
    run_stage("label_mc", __doc__, paths={"problems": "problems JSONL", "samples": "responses JSONL",
                                          "out": "labels JSONL", "metrics": "metrics JSON"},
              sections={"label_mc": LabelMCConfig, "policy": BackendConfig, "engine": EngineConfig}, prepare=prepare_mc, core=label_mc,
              inputs=["problems", "samples"], torch=True)


if __name__ == "__main__":
    main()
