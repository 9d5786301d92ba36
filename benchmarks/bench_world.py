"""Benchmark: the toy world's difficulty mix against the verifier (do hard problems give MC labels false negatives?).

    python -m benchmarks.bench_world --problems 120 --out reports/benchmarks/world_mix.json

On `--problems` normal and as many hard problems (prmlab.toy.world.make_problems, hard_share 0 and 1),
the committed toy policy samples `--n` responses each (the study's sampling settings), MC estimation
labels them with `--k` rollouts per step (the study's label_mc code), and prmlab.pipeline.training_sets.audit scores
the MC labels against the exact verifier, per kind of problem:
- the policy's accuracy and its share of right answers through a wrong step (the study's band:
  40-75% accuracy, >= 5% flawed among right);
- MC's false alarms (a correct step called wrong: the completer failed from a correct prefix, the
  paper's "incorrect answers from correct steps") and missed errors (right answers from wrong steps).
The study's mix is then a choice of `toy.hard_share` from these rates. Measured, never asserted.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks import positive_int


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="models/policy")
    ap.add_argument("--problems", type=positive_int, default=120)
    ap.add_argument("--n", type=positive_int, default=4)
    ap.add_argument("--k", type=positive_int, default=8)
    ap.add_argument("--hard-max-steps", type=int, default=8)
    ap.add_argument("--hard-max-value", type=int, default=60)
    ap.add_argument("--threads", type=positive_int, default=2)
    ap.add_argument("--judge", action="store_true", help="also the study's judge (params `judge`, `label_judge`): its "
                    "audit and the share consensus keeps (MC's first error == the judge's), per kind of problem")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    from prmlab.engines.config import BackendConfig, Sampling
    from prmlab.engines.generation import make_generator
    from prmlab.pipeline.labeling import MCStats, mc_exhaustive
    from prmlab.pipeline.sampling import SampleConfig, sample_responses
    from prmlab.pipeline.training_sets import audit
    from prmlab.toy.world import make_problems

    res: dict = {"policy": a.policy, "n": a.n, "k": a.k, "hard_max_steps": a.hard_max_steps,
                 "hard_max_value": a.hard_max_value, "kinds": {}}
    cfg = BackendConfig(backend="transformers", model=a.policy, dtype="float32", seed=0, max_model_len=2048, batch_size=256)
    judged: list = []
    with make_generator(cfg) as gen:
        for kind, share in (("normal", 0.0), ("hard", 1.0)):
            t0 = time.monotonic()
            problems = make_problems(97, a.problems, f"w-{kind}", 2, 5, share, a.hard_max_steps, a.hard_max_value)
            responses, _ = sample_responses(gen, problems, SampleConfig(n=a.n, temperature=0.7, top_p=0.8, max_tokens=240,
                                                                        keep_unanswered=True))
            by_id = {p.id: p for p in problems}
            labels = mc_exhaustive(gen, by_id, responses, Sampling(n=a.k, temperature=0.7, top_p=0.8, max_tokens=240, seed=0),
                                   0.0, MCStats())
            mc_fe = {lab.response_id: lab.first_error for lab in labels}
            right = [r for r in responses if r.correct]
            row = {"responses": len(responses), "accuracy": sum(r.correct for r in responses) / max(len(responses), 1),
                   "flawed_among_right": sum(r.true_first_error not in (None, -1) for r in right) / max(len(right), 1),
                   "mean_steps": sum(len(r.steps) for r in responses) / max(len(responses), 1),
                   "mc_audit": audit(responses, mc_fe), "seconds": time.monotonic() - t0}
            if a.judge:
                judged.append((kind, by_id, responses, {lab.response_id: lab for lab in labels}))
            res["kinds"][kind] = row
            au = row["mc_audit"]
            print(f"{kind:6s} {row['responses']} responses, accuracy {100 * row['accuracy']:.1f}%, flawed among right "
                  f"{100 * row['flawed_among_right']:.1f}%; MC: first-error accuracy {au['first_error_accuracy']:.3f}, "
                  f"false alarms {100 * au['false_alarm_rate']:.1f}%, missed errors {100 * au['missed_error_rate']:.1f}% "
                  f"({row['seconds']:.0f} s)", flush=True)
    if judged:  # after the policy is released: one model in memory at a time
        from prmlab.core.params import load_params
        from prmlab.pipeline.labeling import judge_labels
        from prmlab.pipeline.labeling_config import LabelJudgeConfig
        from prmlab.pipeline.training_sets import agreement_counts, audit_table
        from prmlab.prompts import load_template

        jcfg = load_params("label_judge", LabelJudgeConfig, a.params)
        template = load_template(jcfg.style, jcfg.template_file)
        with make_generator(load_params("judge", BackendConfig, a.params)) as gen:
            for kind, by_id, responses, mc in judged:
                t0 = time.monotonic()
                judge = {lab.response_id: lab for lab in judge_labels(gen, by_id, responses, template, jcfg.style,
                                                                      jcfg.sampling())}
                # the consensus stage's own rule, counts and audit
                row, table = res["kinds"][kind], audit_table(responses, mc, judge)
                row["judge_audit"], row["consensus_audit"] = table["judge"], table["consensus"]
                row["consensus_kept_share"] = agreement_counts(responses, mc, judge)["consensus_kept_share"]
                row["judge_seconds"] = time.monotonic() - t0
                print(f"{kind:6s} judge: first-error accuracy {row['judge_audit']['first_error_accuracy']:.3f}; consensus keeps "
                      f"{100 * row['consensus_kept_share']:.1f}% (first-error accuracy "
                      f"{row['consensus_audit']['first_error_accuracy']:.3f}) ({row['judge_seconds']:.0f} s)", flush=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
