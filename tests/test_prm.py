import pytest
import torch

from prmlab.io import read_jsonl
from prmlab.labeling import labels_from_first_error
from prmlab.prm import STEP_TOKEN, Qwen2ForProcessRewardModel, TransformersScorer, encode, prepare_tokenizer
from prmlab.records import PRMExample, Problem
from prmlab.toy.world import canonical_steps, make_flawed, verify


def examples(toy, n=24):
    import random

    rng = random.Random(0)
    out = []
    for i, p in enumerate(read_jsonl(toy["problems"] / "processbench.jsonl", Problem)[:n]):
        steps = canonical_steps(p) if i % 2 else make_flawed(rng, p, "slip")[0]
        fe = verify(p, steps).first_error
        labels = labels_from_first_error(len(steps), fe)
        out.append(PRMExample(prompt=p.question, completions=steps[: len(labels)], labels=labels, response_id=str(i)))
    return out


@pytest.fixture(scope="module")
def trained_prm(toy, tmp_path_factory):
    from stages.train_prm import TrainPRMConfig, train

    out = tmp_path_factory.mktemp("prm") / "oracle"
    ex = examples(toy)
    m = train(ex, toy["policy"], str(out), TrainPRMConfig(lr=3e-3, epochs=3, batch_size=8, max_length=512), soft=False)
    m["n_examples"] = len(ex)
    return out, m


def test_layout_matches_released_qwen_prm(trained_prm):
    out, m = trained_prm
    import json

    cfg = json.loads((out / "config.json").read_text())
    assert cfg["architectures"] == ["Qwen2ForProcessRewardModel"] and cfg["model_type"] == "qwen2"
    from safetensors.torch import load_file

    keys = set(load_file(str(out / "model.safetensors")))
    assert {"score.0.weight", "score.0.bias", "score.2.weight", "score.2.bias"} <= keys
    assert any(k.startswith("model.layers.0.") for k in keys) and not any(k.startswith("lm_head") for k in keys)
    assert m["optimizer_steps"] == 3 * -(-m["n_examples"] // 8)  # 3 epochs of ceil(n / batch 8)
    assert m["examples"] == m["n_examples"] and m["train_loss"] > 0


def test_truncation_keeps_whole_steps(toy):
    tok = prepare_tokenizer(toy["policy"])
    steps = ["1 + 1 = 2"] * 40
    full = encode(tok, "q", steps, 10_000)
    assert len(full.step_positions) == 40 and full.dropped_steps == 0
    cut = encode(tok, "q", steps, len(full.input_ids) - 10)
    assert cut.dropped_steps >= 1 and len(cut.step_positions) == 40 - cut.dropped_steps
    assert cut.input_ids[cut.step_positions[-1]] == tok.convert_tokens_to_ids(STEP_TOKEN)


def test_soft_loss_options():
    from prmlab.prm import prm_loss

    logits = torch.tensor([[[0.0, 0.0], [2.0, -1.0]]])
    labels = torch.tensor([[1, -100]])
    soft = torch.tensor([[0.5, -1.0]])
    assert torch.isclose(prm_loss(logits, labels, soft, "ce"), torch.tensor(0.6931), atol=1e-4)
    assert torch.isclose(prm_loss(logits, labels, soft, "mse"), torch.tensor(0.0))
    assert torch.isclose(prm_loss(logits, labels, soft, "bce"), torch.tensor(0.6931), atol=1e-4)


def test_scorer_scores_every_step(trained_prm, toy):
    out, _ = trained_prm
    ex = examples(toy, 6)
    scores = TransformersScorer(str(out)).score([(e.prompt, e.completions) for e in ex])
    assert [len(s) for s in scores] == [len(e.completions) for e in ex]
    assert all(0.0 <= x <= 1.0 for s in scores for x in s)
    # the class is the one the checkpoint loads into
    assert isinstance(Qwen2ForProcessRewardModel.from_pretrained(str(out)), Qwen2ForProcessRewardModel)


@pytest.mark.vllm
def test_vllm_pooling_scorer_matches_transformers(trained_prm, toy):
    pytest.importorskip("vllm")
    from prmlab.prm import VLLMScorer

    out, _ = trained_prm
    ex = examples(toy, 8)
    items = [(e.prompt, e.completions) for e in ex]
    ref = TransformersScorer(str(out)).score(items)
    with VLLMScorer(str(out), max_length=2048, kv_cache_gib=1) as vs:
        got = vs.score(items)
    assert [len(s) for s in got] == [len(s) for s in ref]
    diff = max(abs(a - b) for s, t in zip(ref, got) for a, b in zip(s, t))
    assert diff < 1e-4, diff


def test_training_is_deterministic_for_a_seed(toy, tmp_path):
    """The new score head is drawn before the Trainer seeds; train_prm seeds it first."""
    from stages.train_prm import TrainPRMConfig, train

    ex, cfg = examples(toy, 12), TrainPRMConfig(lr=3e-3, epochs=1, batch_size=4, max_length=512)
    a = train(ex, toy["policy"], str(tmp_path / "a"), cfg, soft=False)
    b = train(ex, toy["policy"], str(tmp_path / "b"), cfg, soft=False)
    assert a["train_loss"] == b["train_loss"]
    items = [(e.prompt, e.completions) for e in ex]
    assert TransformersScorer(str(tmp_path / "a")).score(items) == TransformersScorer(str(tmp_path / "b")).score(items)
