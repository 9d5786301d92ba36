"""Stage label_judge: LLM-as-a-judge names the first wrong step of every sampled response.

The prompt template is `critic` (ProcessBench style, 0-based `<paragraph_i>`, index in \\boxed{})
or `paper` (the PRM paper's judge: 1-based paragraphs, `<analysis_k>` blocks up to the first wrong
one, then `<conclusion>Correct|Incorrect</conclusion>`, the wrong paragraph being the last one
analysed); `template_file` swaps in a user's wording (e.g. the official ProcessBench template or
the paper's judge prompt), with `{problem}` or `{tagged_problem}` and `{tagged_response}`.
Answers that cannot be parsed, or name a paragraph that does not exist, are recorded as unparsed:
counted, excluded from consensus, never read as "correct".
With n > 1, the judgement is a majority vote over n samples. Identical responses to a problem
(a policy at temperature 0.7 repeats itself) are judged once per shard and share the verdict;
`distinct_responses` in the metrics counts them.
The labels' quality against the toy verifier is audited once, by stage consensus.

Inputs: --problems, --samples. Params: `label_judge`, `judge` (backend), `engine` (where shards run). Core: prmlab.pipeline.labeling.label_judge.
Outputs: --out JSONL (JudgeLabel), --metrics JSON.
Run: python -m stages.label_judge --problems data/problems/train.jsonl --samples data/samples/train.jsonl --out data/labels/judge.jsonl --metrics metrics/label_judge.json
"""

from prmlab.core.stage import run_stage
from prmlab.engines.cluster import EngineConfig
from prmlab.engines.config import BackendConfig
from prmlab.pipeline.labeling import label_judge, prepare_judge
from prmlab.pipeline.labeling_config import LabelJudgeConfig


def main() -> None:
    run_stage("label_judge", __doc__, paths={"problems": "problems JSONL", "samples": "responses JSONL",
                                             "out": "labels JSONL", "metrics": "metrics JSON"},
              sections={"label_judge": LabelJudgeConfig, "judge": BackendConfig, "engine": EngineConfig}, prepare=prepare_judge,
              core=label_judge, inputs=["problems", "samples"], torch=True)


if __name__ == "__main__":
    main()
