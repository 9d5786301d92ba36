"""The committed toy models against the targets they were built to meet, measured on held-out problems by the exact
verifier with the stages' own code (prmlab.toy.recipes), at another sampling seed than the stages'."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _setup():
    from prmlab.core.params import load_params
    from prmlab.toy.recipes import ToyModelsConfig, training_problems
    from prmlab.toy.world import ToyWorldConfig

    for role in ("base", "policy", "judge"):
        if not (ROOT / "models" / role / "model.safetensors").exists():
            pytest.fail(f"models/{role} is missing: the toy checkpoints are committed (dvc repro -f bootstrap@toy train_judge@toy)")
    cfg = load_params("toy_models", ToyModelsConfig, ROOT / "params.yaml")
    # 150 held-out problems bootstrap never trained on
    return cfg, training_problems(cfg.seed, ToyWorldConfig(), 0, 0, cfg.eval_problems)["heldout"][:150]


def test_committed_policy_errs_in_band_with_right_answers_through_wrong_steps():
    from prmlab.toy.recipes import measure_policy

    cfg, problems = _setup()
    m, _ = measure_policy(ROOT / "models" / "policy", problems, cfg.eval_temperature, seed=cfg.seed + 1)
    assert 0.40 <= m["policy_accuracy"] <= 0.75, m
    assert m["policy_flawed_correct_share"] >= 0.03, m
    assert m["policy_first_error_slip_share"] > 0 and m["policy_first_error_operand_share"] > 0, m


def test_committed_judge_beats_always_answering_no_error():
    from prmlab.core.params import load_params
    from prmlab.prompts import load_template
    from prmlab.toy.recipes import ToyJudgeConfig, measure_judge, measure_policy

    cfg, problems = _setup()
    jcfg = load_params("toy_judge", ToyJudgeConfig, ROOT / "params.yaml")
    _, steps = measure_policy(ROOT / "models" / "policy", problems, cfg.eval_temperature, seed=cfg.seed + 1)
    j, _ = measure_judge(ROOT / "models" / "judge", problems, steps, "critic", load_template("critic"), jcfg.max_tokens)
    # The judge's targets: at least 0.75, and at least 0.2 above always answering -1; and it finds most
    # errors while passing most error-free responses (not a judge that flags everything).
    assert j["judge_unparsed_share"] <= 0.05, j
    assert j["judge_first_error_accuracy"] >= max(0.75, j["judge_baseline_always_none"] + 0.2), j
    assert j["judge_accuracy_on_erroneous"] >= 0.6 and j["judge_accuracy_on_correct"] >= 0.9, j
