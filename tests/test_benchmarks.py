"""The benchmarks' own arithmetic, on hand-checked tables (the benchmarks themselves print figures and are not run here)."""

import math

from benchmarks.bench_prm_seeds import seed_spread


def _run(source, seed, steps, f1, auc, bon):
    return {"source": source, "seed": seed, "optimizer_steps_asked": steps, "f1_heldout": f1, "step_auc_heldout": auc,
            "bon_product": bon, "bon_random": 70.0, "bon_maj": 78.0}


def test_seed_spread_mean_and_t_interval_per_source_and_steps():
    results = {"oracle:3000:0": _run("oracle", 0, 3000, 50.0, 0.7, 80.0),
               "oracle:3000:1": _run("oracle", 1, 3000, 60.0, 0.8, 82.0),
               "oracle:3000:2": _run("oracle", 2, 3000, 70.0, 0.9, 84.0),
               "oracle:8000:0": _run("oracle", 0, 8000, 99.0, 0.99, 99.0),  # another budget: not pooled
               "judge:3000:0": _run("judge", 0, 3000, 40.0, 0.6, 75.0),
               "summary": {"3000": {}}}
    s = seed_spread(results, 3000)
    assert sorted(s) == ["judge", "oracle"] and s["oracle"]["seeds"] == [0, 1, 2]
    f1 = s["oracle"]["f1_heldout"]
    # sd of 50, 60, 70 is 10; t(0.975, 2 df) = 4.303; half-width 4.303 * 10 / sqrt(3) = 24.84
    assert f1["mean"] == 60.0 and f1["points"] == [50.0, 60.0, 70.0]
    assert math.isclose(f1["hi"] - 60.0, 24.843, abs_tol=1e-3) and math.isclose(60.0 - f1["lo"], 24.843, abs_tol=1e-3)
    assert math.isclose(s["oracle"]["bon_product"]["hi"], 82.0 + 4.303 * 2 / math.sqrt(3), abs_tol=1e-9)
    assert s["oracle"]["bon_maj"] == {"mean": 78.0, "lo": 78.0, "hi": 78.0, "points": [78.0] * 3}
    one = s["judge"]["f1_heldout"]  # one seed: the value, no interval
    assert one["mean"] == 40.0 and math.isnan(one["lo"]) and math.isnan(one["hi"])
    assert seed_spread(results, 8000)["oracle"]["step_auc_heldout"]["mean"] == 0.99
