"""Stage build_processbench@toy (toy profile only): a toy ProcessBench built the way the real one was.

Held-out problems, several policy responses each, labelled by the exact verifier (the earliest
wrong step, -1 if none), balanced between responses with a wrong and a correct final answer. So,
like the real benchmark, it holds correct answers reached through flawed steps.

Inputs: --problems (held-out split). Params: `build_processbench`, `policy`.
Core: prmlab.pipeline.processbench.build_processbench.
Outputs: --out JSONL (ProcessBenchItem), --metrics JSON. The items are split by problem into subset
`toy_tune` (a `tune_share` of them: eval_processbench tunes the PRM threshold there, as ProcessBench
does on GSM8K) and subset `toy` (held out: the F1 the report headlines).
Run: python -m stages.build_processbench --problems data/problems/processbench.jsonl --out data/processbench/items.jsonl --metrics metrics/build_processbench.json
"""

from prmlab.core.stage import run_stage
from prmlab.engines.config import BackendConfig
from prmlab.pipeline.processbench import BuildPBConfig, build_processbench, prepare_build


def main() -> None:
    run_stage("build_processbench", __doc__, paths={"problems": "held-out problems JSONL", "out": "items JSONL",
                                                    "metrics": "metrics JSON"},
              sections={"build_processbench": BuildPBConfig, "policy": BackendConfig}, prepare=prepare_build,
              core=build_processbench, inputs=["problems"], torch=True)


if __name__ == "__main__":
    main()
