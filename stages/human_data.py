"""Stage human_data@<source>: a released step-labelled file (PRM800K, Math-Shepherd) as PRM examples.

One stage per entry of params `human_labels` ({source: path}; empty in the toy profile). Converts the
file (or folder of .jsonl files) with prmlab.pipeline.human_labels (its docstring states every conversion
rule and its source), then drops every example whose problem is an evaluation problem: PRM800K's
problems come from MATH, whose test problems are in the Best-of-N MATH benchmark and ProcessBench's
math subset. Counts of what was converted, skipped, cut and removed go to --metrics; prm_data@<source>
reads the examples back as that source's training set.

Inputs: --file (named in params `human_labels`, never fetched), --eval-texts (every evaluation set's
problem texts, uncapped, as the profile's first stage wrote them). Core: prmlab.pipeline.human_labels.human_examples.
Outputs: --out JSONL (PRMExample), --metrics JSON.
Run: python -m stages.human_data --source prm800k --file ../prm800k/data --eval-texts data/problems/eval_texts.json --out data/human/prm800k.jsonl --metrics metrics/human_data/prm800k.json
(under `dvc repro`, stage human_data@<source> names the source, --file defaults to params human_labels.<source>
and the paths say `{source}`: no params string reaches DVC's shell)
"""

from prmlab.core.stage import run_stage
from prmlab.pipeline.human_labels import human_examples, read_human


def main() -> None:
    run_stage("human_data@{source}", __doc__,
              paths={"source": "?prm800k | math_shepherd (default: DVC's stage human_data@<source>)",
                     "file": "?the released file or folder (default: params human_labels.<source>)",
                     "eval_texts": "the evaluation sets' problem texts (inputs@real, problems@toy)",
                     "out": "PRM examples JSONL", "metrics": "metrics JSON"},
              prepare=read_human, core=human_examples, inputs=["file"])


if __name__ == "__main__":
    main()
