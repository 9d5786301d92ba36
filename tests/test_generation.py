import socket
import subprocess
import sys
import time

import pytest

from prmlab.generation import BackendConfig, GenerationError, Sampling, make_generator
from prmlab.io import read_jsonl
from prmlab.prompts import policy_messages
from prmlab.records import Problem


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


@pytest.mark.vllm
def test_vllm_generates_from_the_toy_policy(toy, vllm_policy):
    sp = Sampling(n=4, temperature=0.7, top_p=0.8, max_tokens=60)
    out = vllm_policy.chat(prompts(toy), sp)
    assert len(out) == 6 and all(len(x) == 4 for x in out)
    assert any(c.text.strip() for x in out for c in x)
    greedy = vllm_policy.chat(prompts(toy, 2), Sampling(temperature=0.0, max_tokens=60))
    ref = make_generator(BackendConfig(backend="transformers", model=toy["policy"])).chat(prompts(toy, 2), Sampling(temperature=0.0, max_tokens=60))
    # float32 greedy decoding: both engines agree on the first tokens at least
    assert [g[0].text[:8] for g in greedy] == [r[0].text[:8] for r in ref]


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
