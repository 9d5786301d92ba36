"""JSONL records round-trip atomically; ShardWriter keeps a killed run's shards for a rerun with the same
fingerprint. (Bad records and their messages: tests/pipeline/test_bad_inputs.py.)"""

from prmlab.core.io import ShardWriter, read_jsonl, write_jsonl
from prmlab.core.records import Problem


def test_roundtrip_and_atomic(tmp_path):
    p = tmp_path / "a" / "problems.jsonl"
    rows = [Problem(id="1", source="toy", question="q?", gold_answer="3", meta={"x": [1]})]
    assert write_jsonl(p, rows) == 1
    assert read_jsonl(p, Problem) == rows
    assert [f.name for f in p.parent.iterdir()] == ["problems.jsonl"]  # no temp file left behind


def test_shard_writer_resumes_and_restarts_on_new_fingerprint(tmp_path):
    out = tmp_path / "labels.jsonl"
    w = ShardWriter(out, "fp1")
    w.write(0, [{"i": 0}])
    assert w.done(0) and not w.done(1)
    del w  # killed: its lock goes with it
    w2 = ShardWriter(out, "fp1")  # a rerun after a kill keeps finished shards
    assert w2.done(0)
    w2.write(1, [{"i": 1}])
    assert w2.finish(2) == 2
    assert read_jsonl(out) == [{"i": 0}, {"i": 1}]
    assert not (tmp_path / "labels.jsonl.shards").exists()
    w3 = ShardWriter(tmp_path / "other.jsonl", "a")
    w3.write(0, [{"i": 9}])
    del w3
    assert not ShardWriter(tmp_path / "other.jsonl", "b").done(0)  # other params: start over
