import socket
import subprocess
import sys
import time

import pytest

from prmlab.core.io import read_jsonl
from prmlab.core.records import Problem
from prmlab.engines.config import BackendConfig, Sampling
from prmlab.engines.generation import Completion, GenerationError, make_generator
from prmlab.prompts import policy_messages


def prompts(toy, n=6):
    return [policy_messages(p.question) for p in read_jsonl(toy["problems"] / "processbench.jsonl", Problem)[:n]]


def test_transformers_same_seed_same_texts(toy):
    gen = make_generator(BackendConfig(backend="transformers", model=toy["policy"], batch_size=8))
    sp = Sampling(n=3, temperature=0.9, top_p=0.9, max_tokens=40, seed=123)
    a, b = gen.chat(prompts(toy), sp), gen.chat(prompts(toy), sp)
    assert [[c.text for c in x] for x in a] == [[c.text for c in x] for x in b]
    assert all(len(x) == 3 for x in a)
    c = gen.chat(prompts(toy), Sampling(n=3, temperature=0.9, top_p=0.9, max_tokens=40, seed=124))
    assert [[c_.text for c_ in x] for x in c] != [[c_.text for c_ in x] for x in a]
    assert all(0 < comp.num_tokens <= 41 for x in a for comp in x)


def test_transformers_stop_strings_and_raw_continuation(toy):
    gen = make_generator(BackendConfig(backend="transformers", model=toy["policy"]))
    raw = gen.render(prompts(toy, 1)[0]) + "buys"
    out = gen.generate([raw], Sampling(n=2, temperature=0.0, max_tokens=60, stop=["\n\n"]))
    assert len(out[0]) == 2 and all("\n\n" not in c.text for c in out[0])


def test_transformers_each_request_gets_its_own_token_budget(toy, tmp_path):
    """Before: the budget was sized from the padded batch, so one long prompt cut every other
    request in its batch short, silently (MC labels came out wrong). The letters policy never ends by
    itself, so each completion shows its budget exactly: min(max_tokens, max_model_len - own length)."""
    from conftest import letters_policy

    model = letters_policy(toy, tmp_path / "letters")
    gen = make_generator(BackendConfig(backend="transformers", model=model, max_model_len=400, batch_size=8))
    short = gen.render(prompts(toy, 1)[0])
    n_short = len(gen.tokenizer(short, add_special_tokens=False).input_ids)
    long = short + "x " * ((400 - n_short - 10) // 2)  # leaves room for a few tokens only
    n_long = len(gen.tokenizer(long, add_special_tokens=False).input_ids)
    assert 0 < 400 - n_long < 30
    over = short + "x " * 400  # already past max_model_len
    sp = Sampling(n=2, temperature=0.0, max_tokens=30)
    alone = gen.generate([short], sp)[0]
    out = gen.generate([long, short, over], sp)
    assert [c.num_tokens for c in out[1]] == [30, 30] and out[1] == alone  # as if alone in the batch
    assert [c.num_tokens for c in out[0]] == [400 - n_long] * 2
    assert out[2] == [Completion("", 0, True)] * 2  # no room at all: empty, counted as cut, no model call
    assert all(c.truncated for x in out for c in x)  # none ended by itself
    # a stop string ends a completion: not truncated
    stopped = gen.generate([short], Sampling(temperature=0.0, max_tokens=30, stop=["a", "b"]))[0][0]
    assert stopped.text == "" and not stopped.truncated


@pytest.mark.vllm
def test_vllm_generates_from_the_toy_policy(toy, vllm_policy):
    sp = Sampling(n=4, temperature=0.7, top_p=0.8, max_tokens=60)
    out = vllm_policy.chat(prompts(toy), sp)
    assert len(out) == 6 and all(len(x) == 4 for x in out)
    assert any(c.text.strip() for x in out for c in x)
    cut = vllm_policy.chat(prompts(toy, 2), Sampling(n=2, temperature=0.7, max_tokens=2))  # vLLM's finish_reason
    assert all(c.num_tokens == 2 for x in cut for c in x if c.truncated) and any(c.truncated for x in cut for c in x)
    greedy = vllm_policy.chat(prompts(toy, 2), Sampling(temperature=0.0, max_tokens=60))
    ref = make_generator(BackendConfig(backend="transformers", model=toy["policy"])).chat(prompts(toy, 2), Sampling(temperature=0.0, max_tokens=60))
    # float32 greedy decoding: both engines agree on the first tokens at least
    assert [g[0].text[:8] for g in greedy] == [r[0].text[:8] for r in ref]


def texts(outs):
    return [[c.text for c in x] for x in outs]


@pytest.mark.vllm
def test_vllm_same_seed_same_texts_whatever_the_batch(toy, vllm_policy):
    """Per-request seeds: a sampled call repeats exactly (the engine's RNG has moved on in between), and
    a prompt draws the same whatever else is in the call."""
    gen = vllm_policy
    ps = [gen.render(m) for m in prompts(toy, 6)]
    sp = Sampling(n=3, temperature=0.7, top_p=0.95, max_tokens=40, seed=7)
    a = texts(gen.generate(ps[:4], sp))
    gen.generate(ps[4:], Sampling(n=2, temperature=1.0, max_tokens=20, seed=99))  # moves the engine's own RNG
    assert texts(gen.generate(ps[:4], sp)) == a
    assert len({t for x in a for t in x}) > 4  # really sampled: the 3 samples of a prompt differ
    # the first two prompts draw the same alone or beside others
    assert texts(gen.generate(ps[:2], sp)) == a[:2]
    assert texts(gen.generate(ps[:2] + ps[4:], sp))[:2] == a[:2]
    assert texts(gen.generate(ps[:4], Sampling(n=3, temperature=0.7, top_p=0.95, max_tokens=40, seed=8))) != a


@pytest.mark.parametrize("backend", ["transformers", pytest.param("vllm", marks=pytest.mark.vllm)])
def test_resumed_sharded_sampling_draws_what_a_fresh_run_does(toy, tmp_path, backend, request):
    """The stages' resume path (prmlab.engines.cluster.Engine.shards, seed + shard index from `cfg.sampling(shard)`):
    a run killed after shard 0 and resumed computes shard 1 alone, after other work on the same engine,
    and still writes what an uninterrupted run writes."""
    from prmlab.core.io import ShardWriter
    from prmlab.engines.cluster import Engine
    from prmlab.pipeline.sampling import SampleConfig

    if backend == "vllm":
        gen = request.getfixturevalue("vllm_policy")
    else:
        gen = make_generator(BackendConfig(backend="transformers", model=toy["policy"], batch_size=8))
    eng = Engine(BackendConfig(), gen=gen, desc="test")
    problems = read_jsonl(toy["problems"] / "processbench.jsonl", Problem)[:4]
    cfg = SampleConfig(n=2, temperature=0.8, top_p=0.95, max_tokens=48, shard_size=2)
    assert cfg.sampling(1).seed == cfg.sampling(0).seed + 1

    def work(gen, i, chunk):  # stage sample's work, keeping raw texts (the tiny test policy rarely reaches an answer)
        outs = gen.chat([policy_messages(p.question) for p in chunk], cfg.sampling(i))
        return [{"id": f"{p.id}/r{j}", "text": c.text} for p, comps in zip(chunk, outs) for j, c in enumerate(comps)], {"i": i}

    fresh, metas = eng.shards(problems, cfg.shard_size, ShardWriter(tmp_path / "fresh.jsonl", "fp"), work)
    assert metas == {0: {"i": 0}, 1: {"i": 1}}
    # the killed run: shard 0 written, then the process died
    ShardWriter(tmp_path / "resumed.jsonl", "fp").write(0, work(gen, 0, problems[:2])[0])
    gen.generate(["unrelated work"], Sampling(n=3, temperature=1.0, max_tokens=16, seed=5))
    w = ShardWriter(tmp_path / "resumed.jsonl", "fp")
    assert w.done(0) and not w.done(1)
    calls = []
    resumed, metas = eng.shards(problems, cfg.shard_size, w, lambda g, i, chunk: calls.append(i) or work(g, i, chunk))
    assert calls == [1] and metas == {1: {"i": 1}}  # shard 0 was reused, only shard 1 ran (and counted)
    assert resumed == fresh and len(fresh) == 8
    assert len({r["text"] for r in fresh}) > 4  # really sampled
    eng.close()  # the engine does not close a generator it was given
    assert gen.generate(["still open"], Sampling(max_tokens=2))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.vllm
@pytest.mark.slow
def test_openai_backend_against_real_vllm_serve(toy, tmp_path):
    pytest.importorskip("vllm")
    port = free_port()
    log = open(tmp_path / "serve.log", "w")
    srv = subprocess.Popen([sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", toy["policy"],
                            "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "2048", "--dtype", "float32"],
                           stdout=log, stderr=subprocess.STDOUT)
    try:
        import httpx

        deadline = time.time() + 240
        while time.time() < deadline:
            assert srv.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        gen = make_generator(BackendConfig(backend="openai", model=toy["policy"], base_url=f"http://127.0.0.1:{port}/v1",
                                           max_concurrency=4))
        out = gen.chat(prompts(toy, 3), Sampling(n=2, temperature=0.7, max_tokens=30))
        assert len(out) == 3 and all(len(x) == 2 for x in out)
        raw = gen.generate([gen.render(prompts(toy, 1)[0])], Sampling(n=1, temperature=0.0, max_tokens=20))
        assert len(raw[0]) == 1 and raw[0][0].num_tokens > 0
    finally:
        srv.terminate()
        srv.wait(30)


def test_openai_backend_unreachable_is_a_clear_error():
    gen = make_generator(BackendConfig(backend="openai", model="x", base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=1))
    with pytest.raises(GenerationError, match="cannot reach the OpenAI-compatible server"):
        gen.chat([[{"role": "user", "content": "hi"}]], Sampling())
