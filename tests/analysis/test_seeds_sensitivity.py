"""Reports/seeds.md's sensitivity block (every verdict without the development seed, by the
machine each seed's file names, each estimate by its own rule), seed files that name their machine and torch build,
and the report's provenance naming the commit whose params made the study. Seeds here are hand-made records, their
intervals worked by hand: `prmlab.analysis.findings.t_interval` takes the larger of the across-seed variance and the mean
within-seed one, and every hand-made seed has a within-seed half-width of 0.1 (variance (0.1 / 1.96)^2), so two
seeds that agree to 0.02 get 12.706 x (0.1 / 1.96) / sqrt(2) = +-0.458 about their mean."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HALF = 0.1  # every hand-made seed's within-seed half-width
TWO_SEED_HALF = 12.706 * (HALF / 1.96) / 2 ** 0.5  # 0.4584: Student t, 1 degree of freedom


def finding(fid: str, points: dict[str, float]) -> dict:
    """One seed's findings record: each estimate its point +- HALF, the verdict by the project's rule (`decide`)."""
    from prmlab.analysis.findings import decide

    ests = {n: [p, p - HALF, p + HALF] for n, p in points.items()}
    return {"id": fid, "claim": f"claim {fid}", "paper": f"paper {fid}", "ours": "-", "estimates": ests,
            "verdict": decide(fid, {n: e[1:] for n, e in ests.items()}),
            "precision": {n: {"half_width": HALF, "paper_effect": None} for n in ests}}


def seed(k: int, findings: list[dict], machine: str | None = None, torch: str | None = None) -> dict:
    """A seed's file as prmlab.runs.store.write_seed writes it; without `machine`, as one filed before seed files named their machine."""
    rec = {"seed": k, "commit": "abc1234", "study": "s", "ran": f"run {k}", "findings": findings, "targets_26": {},
           "headline": None}
    return rec | ({"machine": machine, "torch": torch} if machine else {})


def test_dropping_the_development_seed_is_decided_again_and_can_flip_a_verdict():
    """Seeds 1 and 2 agree (1.00, 1.02: [0.55, 1.47], above 0); seed 0 says -5, so all three give mean -0.99, sd
    3.47, +-4.303 x 3.47 / sqrt(3) = +-8.6: inconclusive. Without the development seed the finding is reproduced."""
    from prmlab.report.seeds import aggregate_page

    recs = {f"seed-{k}": seed(k, [finding("toy_gap", {"gap": p})]) for k, p in enumerate([-5.0, 1.0, 1.02])}
    agg, record, md = aggregate_page(recs, None)
    assert agg[0]["verdict"] == "inconclusive"
    every, without = record["sensitivity"]["groups"]
    assert every["seeds"] == ["seed-0", "seed-1", "seed-2"] and every["findings"]["toy_gap"]["verdict"] == "inconclusive"
    assert without["seeds"] == ["seed-1", "seed-2"] and without["across"]
    got = without["findings"]["toy_gap"]
    assert got["verdict"] == "reproduced" and got["estimates"]["gap"]["verdict"] == "reproduced"
    assert got["estimates"]["gap"]["lo"] == pytest.approx(1.01 - TWO_SEED_HALF, abs=1e-3)
    assert got["estimates"]["gap"]["hi"] == pytest.approx(1.01 + TWO_SEED_HALF, abs=1e-3)
    assert record["sensitivity"]["development_seed"] == "seed-0"
    # the block: the changed verdict in bold, the interval as decided; the rest of the page as it was
    block = md[md.index("## Sensitivity"):]
    assert "| claim toy_gap | inconclusive | **reproduced** |" in block
    assert "| claim toy_gap | gap | yes | -1.0 [-9.6, 7.6] inconclusive | 1.0 [0.6, 1.5] **reproduced** |" in block
    # seed 0 is marked wherever seeds are listed; no file names a machine: said, not guessed, and no split
    assert "- seed-0 (development seed): commit abc1234, run 0" in md and "runs: seed-0 (development seed), seed-1" in md
    assert "| seed-1 | not recorded | not recorded |" in block and "cannot be split by machine" in block
    assert len(record["sensitivity"]["groups"]) == 2
    # fragile: it flips without seed 0 (a group above), not without seed 1 or 2 (-5 and one of 1.0/1.02: inconclusive)
    assert [g["name"] for g in record["sensitivity"]["without_each_seed"]] == ["without seed-1", "without seed-2"]
    assert record["sensitivity"]["fragile"]["toy_gap"] == ["without seed-0 (development seed) (2): reproduced"]
    assert "| claim toy_gap | inconclusive | **fragile** | without seed-0 (development seed) (2): reproduced |" in block


def test_a_verdict_that_flips_with_one_seed_left_out_or_against_another_reference_is_fragile(monkeypatch):
    """Three seeds 1.0, 1.02, 5.0 on a gap: all three give mean 2.34, +-4.303 x 2.29 / sqrt(3) = +-5.7: inconclusive;
    without seed 3 it is reproduced ([0.55, 1.47]): fragile. A finding decided against the judge PRM whose same statistic
    against the human PRM says otherwise is fragile too; one that holds everywhere is robust."""
    import prmlab.analysis.findings as F
    from prmlab.report.seeds import aggregate_page

    monkeypatch.setattr(F, "FINDINGS", (F.Finding("toy_refs", "toy refs", "claim toy_refs", "paper",
                                                  (F.Estimate("gap_vs_{}", "gap vs {}", "points"),), deciding="gap_vs_judge"),))
    recs = {f"seed-{k}": seed(k, [finding("toy_gap", {"gap": p}), finding("toy_sure", {"sure": 3.0 + d}),
                                  finding("toy_refs", {"gap_vs_judge": 3.0 + d, "gap_vs_human": -3.0 + d})])
            for k, (p, d) in enumerate(zip([1.0, 1.02, 5.0], [0.0, 0.02, 0.04]), start=1)}
    agg, record, md = aggregate_page(recs, None)
    fragile = record["sensitivity"]["fragile"]
    assert [f["verdict"] for f in agg] == ["inconclusive", "reproduced", "reproduced"]
    assert fragile == {"toy_gap": ["without seed-3: reproduced"], "toy_sure": [],
                       "toy_refs": ["against another reference (gap vs human): not reproduced"]}
    block = md[md.index("**Fragile or robust**"):]
    assert "| claim toy_sure | reproduced | robust | - |" in block and "| toy refs | reproduced | **fragile** |" in block


def test_verdicts_by_the_machine_each_seed_file_names():
    """Two machines of two seeds each (A: 2.00, 2.02 -> [1.55, 2.47], reproduced; B: -2.00, -2.02 -> not
    reproduced) and one seed filed before seeds named their machine ("not recorded": decided by its own interval).
    Over every seed the finding is inconclusive (the machines disagree)."""
    from prmlab.report.seeds import aggregate_page

    rows = [(2.0, "cpu A"), (2.02, "cpu A"), (-2.0, "gpu B"), (-2.02, "gpu B"), (2.0, None)]
    recs = {f"seed-{k}": seed(k, [finding("toy_gap", {"gap": p})], m, "2.11.0+cu130" if m == "gpu B" else "2.9.0" if m else None)
            for k, (p, m) in enumerate(rows)}
    agg, record, md = aggregate_page(recs, None)
    sens = record["sensitivity"]
    assert sens["machines"] == {"seed-0": "cpu A", "seed-1": "cpu A", "seed-2": "gpu B", "seed-3": "gpu B",
                                "seed-4": "not recorded"}
    assert sens["torch"]["seed-2"] == "2.11.0+cu130" and sens["torch"]["seed-4"] == "not recorded"
    by = {g["name"]: g for g in sens["groups"]}
    assert list(by) == ["every seed (5)", "without seed-0 (development seed) (4)", "cpu A: seed-0 (development seed), seed-1",
                        "gpu B: seed-2, seed-3", "not recorded: seed-4"]
    assert by["every seed (5)"]["findings"]["toy_gap"]["verdict"] == "inconclusive"
    a, b = by["cpu A: seed-0 (development seed), seed-1"], by["gpu B: seed-2, seed-3"]
    assert a["findings"]["toy_gap"]["verdict"] == "reproduced" and b["findings"]["toy_gap"]["verdict"] == "not reproduced"
    assert a["findings"]["toy_gap"]["estimates"]["gap"]["lo"] == pytest.approx(2.01 - TWO_SEED_HALF, abs=1e-3)
    lone = by["not recorded: seed-4"]
    assert not lone["across"] and lone["findings"]["toy_gap"]["estimates"]["gap"] == {
        "mean": 2.0, "lo": 2.0 - HALF, "hi": 2.0 + HALF, "verdict": "reproduced"}
    block = md[md.index("## Sensitivity"):]
    assert "| seed-2 | gpu B | 2.11.0+cu130 |" in block and "| seed-4 | not recorded | not recorded |" in block
    assert "| not recorded: seed-4, one seed: its own interval |" in block
    assert ("| claim toy_gap | inconclusive | inconclusive | **reproduced** | **not reproduced** | **reproduced** |"
            in block)


def test_each_estimate_of_a_finding_by_its_own_rule(monkeypatch):
    """A finding against two reference PRMs, decided by the first (`deciding`): the second, an equivalence within
    +-1 (rule EQUAL), shows its own verdict, not the finding's; the first decides by the side of 0."""
    import prmlab.analysis.findings as F
    from prmlab.report.seeds import aggregate_page

    monkeypatch.setattr(F, "FINDINGS", (F.Finding(
        "toy_refs", "toy refs", "claim toy_refs", "paper",
        (F.Estimate("gap_vs_{}", "gap vs {}", "points"), F.Estimate("tie_vs_{}", "tie vs {}", "points", F.EQUAL, margin=1.0)),
        deciding="gap_vs_judge"),))
    # gap_vs_judge 3.0/3.02 -> [2.55, 3.47]: above 0; tie_vs_human 0.1/0.12 -> [-0.35, 0.57]: within +-1;
    # tie_vs_oracle 2.0/2.02 -> [1.55, 2.47]: wholly beyond +1, not equal
    recs = {f"seed-{k}": seed(k, [finding("toy_refs", {"gap_vs_judge": 3.0 + d, "tie_vs_human": 0.1 + d,
                                                        "tie_vs_oracle": 2.0 + d})]) for k, d in enumerate([0.0, 0.02])}
    agg, record, md = aggregate_page(recs, None)
    assert agg[0]["verdict"] == "reproduced"  # the deciding estimate's
    ests = record["sensitivity"]["groups"][0]["findings"]["toy_refs"]["estimates"]
    assert {n: e["verdict"] for n, e in ests.items()} == {"gap_vs_judge": "reproduced", "tie_vs_human": "reproduced",
                                                          "tie_vs_oracle": "not reproduced"}
    block = md[md.index("## Sensitivity"):]
    assert "| toy refs | gap_vs_judge | yes | 3.0 [2.6, 3.5] reproduced |" in block
    assert "|  | tie_vs_oracle |  | 2.0 [1.6, 2.5] not reproduced |" in block  # by its own rule, not decisive


def test_pending_page_marks_the_development_seed():
    from prmlab.report.seeds import pending_page

    _, md = pending_page(3, {"seed-0": seed(0, [finding("toy_gap", {"gap": 1.0})])}, {"seed-1": "not run", "seed-2": "not run"},
                         "abc1234")
    assert "(seed-0 (development seed))" in md and "| finding | estimate | seed-0 (development seed) |" in md


def test_a_seed_file_names_the_machine_and_torch_its_report_recorded(tmp_path, monkeypatch):
    """prmlab.runs.store.write_seed copies the run's own `device` (its report's findings.json), never this process's; a
    report from before reports recorded their device has none, and its seed file reads "not recorded" in reports/seeds.md."""
    import prmlab.runs.store as S
    from prmlab.report.seeds import seed_machine

    monkeypatch.setattr(S, "study_id", lambda project_dir, rev="HEAD": "s")
    found = {"findings": [finding("toy_gap", {"gap": 1.0})], "machines": ["cpu"],
             "device": {"machine": "NVIDIA H100 80GB HBM3 + Intel Xeon", "torch": "2.11.0+cu130"}}
    rec = json.loads(S.write_seed(str(tmp_path), 3, "abc1234", found, "elsewhere").read_text())
    assert (rec["machine"], rec["torch"]) == ("NVIDIA H100 80GB HBM3 + Intel Xeon", "2.11.0+cu130")
    # a report's findings.json names its exact-label targets "targets_26"; the seed file under its own name, and the
    # seeds' page reads either (seed files filed before the name carry the old key)
    from prmlab.report.seeds import exact_label_targets

    t = {"oracle": {"step_auc": 0.9, "over_maj": {}, "met": True}}
    rec = json.loads(S.write_seed(str(tmp_path), 2, "abc1234", found | {"targets_26": t}, "elsewhere").read_text())
    assert rec["exact_label_targets"] == t and "targets_26" not in rec
    assert exact_label_targets(rec) == exact_label_targets({"targets_26": t}) == t
    old = json.loads(S.write_seed(str(tmp_path), 1, "abc1234", {"findings": found["findings"]}, "here").read_text())
    assert old["machine"] is None and old["torch"] is None and seed_machine(old) == "not recorded"


def test_the_report_records_the_machine_and_torch_its_models_ran_on():
    """findings.json's `device`: the GPUs any stage used, then the CPUs, and the torch builds, from the metrics'
    `machine` (prmlab.core.provenance.machine); None where no stage recorded one."""
    from prmlab.report.study import device

    cpu = {"vendor": "GenuineIntel", "model": "Intel Xeon", "torch": "2.11.0+cu130"}
    m = {"sample": {"machine": cpu}, "label_mc": {}, "train_prm": {"judge": {"machine": cpu | {"gpu": "NVIDIA H100"}},
                                                                   "human": {}}}
    assert device(m) == {"machine": "NVIDIA H100 + Intel Xeon", "torch": "2.11.0+cu130"}
    assert device({"train_prm": {"judge": {"train_loss": 0.2}}}) == {"machine": None, "torch": None}


def test_machine_names_the_torch_build_and_no_gpu_this_process_did_not_use():
    import torch

    from prmlab.core.provenance import machine

    got = machine()
    assert got["torch"] == torch.__version__
    assert ("gpu" in got) == torch.cuda.is_initialized()  # never initialised here for the asking


def test_seeds_of_an_older_study_aggregate_by_its_id(tmp_path, monkeypatch):
    """`flows.seeds --aggregate-only --study ID`: the seed files filed under that study, whatever HEAD's is; a seed
    of another study is named with its own id; --study with anything that would run is refused in one line."""
    import flows.seeds
    import prmlab.runs.store as S

    monkeypatch.setattr(S, "study_id", lambda project_dir, rev="HEAD": "head-study")
    d = tmp_path / "reports" / "seeds"
    d.mkdir(parents=True)
    for k, st in enumerate(["old", "old", "other"]):
        (d / f"seed-{k}.json").write_text(json.dumps(seed(k, [finding("toy_gap", {"gap": 1.0})]) | {"study": st}))
    recs, missing = S.collect(str(tmp_path), 3, "old")
    assert sorted(recs) == ["seed-0", "seed-1"] and missing == {"seed-2": "ran from abc1234, study other, not old"}
    recs, missing = S.collect(str(tmp_path), 3)  # HEAD's study (none pinned): none of them; seeds 1..3 decide
    assert not recs and sorted(missing) == ["seed-1", "seed-2", "seed-3"] and "differ from HEAD's" in missing["seed-1"]
    monkeypatch.setattr(sys, "argv", ["flows.seeds", "--seeds", "3", "--study", "old", "--only", "1"])
    with pytest.raises(SystemExit) as e:
        flows.seeds.main()
    assert e.value.code == 2


def test_study_code_is_the_seeds_study_inputs_less_params():
    from prmlab.core.provenance import STUDY_CODE
    from prmlab.runs.store import STUDY_INPUTS

    assert set(STUDY_INPUTS) == {*STUDY_CODE, "params.yaml"}


def git(cwd, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_provenance_names_the_commit_whose_params_made_the_study(tmp_path, monkeypatch):
    """Before: a report named HEAD, the commit before the one that filed its study (its params were the previous
    study's). study_commits names the first commit holding the workspace's params values (a comment edit is no new
    params), HEAD as the code's commit, uncommitted code, and says so when the params are in no commit."""
    from prmlab.core.provenance import study_commits
    from prmlab.report.study import commits_line

    git(tmp_path, "init", "-q")
    (tmp_path / "params.yaml").write_text("toy:\n  seed: 0\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "params")
    made = git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "params.yaml").write_text("toy:\n  seed: 0   # a comment only\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "comment and code")
    head = git(tmp_path, "rev-parse", "HEAD")
    monkeypatch.chdir(tmp_path)
    c = study_commits()
    assert c == {"code": head, "dirty": [], "params": made}
    assert commits_line(c) == (f"Params: commit `{made}` (the workspace's params.yaml values, unchanged since); "
                               f"code: commit `{head}`")
    # the study run before its params are committed (the case where HEAD is the wrong commit), with an uncommitted code change too
    (tmp_path / "params.yaml").write_text("toy:\n  seed: 1\n")
    (tmp_path / "src" / "a.py").write_text("x = 2\n")
    c = study_commits()
    assert c == {"code": head, "dirty": ["src"], "params": None}
    assert commits_line(c).startswith(f"Params: in no commit when this ran (params.yaml's values differed from commit `{head}`'s")
    assert commits_line(c).endswith(f"code: commit `{head}` with uncommitted changes to src")
    # outside git: nothing named
    monkeypatch.chdir(tmp_path / "src")
    (tmp_path / "src" / "params.yaml").write_text("a: 1\n")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere"))
    assert study_commits()["params"] is None and commits_line(study_commits()).startswith("Params and code: no commit")


def test_the_seeds_page_shows_a_forest_plot_whose_rows_dvc_plots_reads():
    """Every estimate across seeds as a DVC plot row (its mean and 95% interval, whether it decides, the verdict), and
    the page links the figure flows.seeds draws from the same aggregate."""
    from prmlab.report.seeds import FOREST_JSON, FOREST_PNG, aggregate_page, forest_rows

    recs = {f"seed-{k}": seed(k, [finding("hard_soft", {"f1_hard_minus_soft": p})]) for k, p in enumerate([1.0, 1.02])}
    agg, _, md = aggregate_page(recs, None)
    (row,) = forest_rows(agg)
    # the finding's id names the row (short claims can share their first words), its claim in the tooltip, and its
    # unit, the plot's panel (each unit on its own scale)
    assert row["estimate"] == "hard_soft: F1: hard - soft" and row["finding"] == "claim hard_soft" and row["decides"] is True
    assert row["unit"] == "F1 points"
    assert row["mean"] == 1.01 and row["lo"] == pytest.approx(1.01 - TWO_SEED_HALF, abs=0.01) and row["verdict"] == "reproduced"
    assert f"]({FOREST_PNG})" in md and f"reports/{FOREST_JSON}" in md
    one = {"seed-0": seed(0, [finding("hard_soft", {"f1_hard_minus_soft": 1.0})])}
    assert forest_rows(aggregate_page(one, None)[0]) == []  # one seed: no interval across seeds, no row


def test_the_report_knows_its_confirmation_seeds_by_the_development_seed_beside_them():
    """With confirmation seeds (reports/protocol.md), seed 0 is beside the aggregate, never in it: the report shows the
    verdicts across seeds first when the development seed's points are this run's, and says whose they are when not."""
    from prmlab.report.seeds import (
        README_END,
        README_START,
        aggregate_page,
        glance,
        glance_lines,
        readme_results,
    )

    recs = {f"seed-{k}": seed(k, [finding("hard_soft", {"f1_hard_minus_soft": p})]) for k, p in ((1, 1.0), (2, 1.02))}
    dev = seed(0, [finding("hard_soft", {"f1_hard_minus_soft": 0.5})])
    agg, record, md = aggregate_page(recs, None, dev, "Pinned study s at commit c.")
    assert sorted(record["runs"]) == ["seed-1", "seed-2"] and record["development_seed"]["commit"] == dev["commit"]
    assert md.startswith("# The study over several seeds\n\nPinned study s at commit c.") and "Development seed 0" in md
    this_run = dev["findings"]
    g = glance(this_run, record)
    assert g["confirmation"] and g["seeds"] == 2 and len(g["across_seeds"]) == 1
    assert "the development seed 0, never counted" in "\n".join(glance_lines(g))
    other = [dict(this_run[0], estimates={"f1_hard_minus_soft": [0.7, 0.0, 1.0]})]
    g = glance(other, record)
    assert not g["across_seeds"] and "another study's" in g["why_one_seed"]
    # README's results block: the first table only (across seeds here), the development seed's own left to the report
    block = readme_results({"findings": this_run}, record)
    assert block.startswith(README_START) and block.endswith(README_END) and "**The study, across 2 seeds**" in block
    assert "95% interval across seeds" in block and "verdict (one seed)" not in block and "(reports/report.md)" in block
    assert "verdict (one seed)" in readme_results({"findings": other}, record)  # not this study's seeds: its own run


def test_a_readme_without_the_results_block_is_said_and_left_alone(tmp_path, capsys):
    """A fork's own README (no results markers): the seeds' filing says so on stderr and leaves the file as it was,
    rather than failing after the seed was filed; with the markers, the block between them is rewritten."""
    from prmlab.report.seeds import README_END, README_START
    from prmlab.runs.store import write_readme_results

    (tmp_path / "README.md").write_text("# my fork\n")
    write_readme_results(tmp_path, None)
    assert (tmp_path / "README.md").read_text() == "# my fork\n" and "no results block" in capsys.readouterr().err
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "findings.json").write_text(json.dumps({"findings": [finding("hard_soft", {"f1_hard_minus_soft": 1.0})]}))
    (tmp_path / "README.md").write_text(f"# my fork\n\n{README_START}\nold\n{README_END}\n\nmore\n")
    write_readme_results(tmp_path, None)
    text = (tmp_path / "README.md").read_text()
    assert "old" not in text and "| verdict (one seed) |" in text and text.startswith("# my fork\n\n") and text.endswith("\n\nmore\n")
    assert "no seeds have run" in text  # no seeds' record: the committed run alone, saying why
