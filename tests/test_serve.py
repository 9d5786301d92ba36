"""flows.serve reads a cron in a named time zone (UTC unless told) and rejects an unknown zone up front; `make
prefect-ui` on any port serves a UI that asks its API on that port."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_unknown_time_zone_is_refused_before_anything_is_served(monkeypatch, capsys):
    from flows import serve

    served = []
    monkeypatch.setattr(serve.pipeline, "serve", lambda **kw: served.append(kw))
    monkeypatch.setattr("sys.argv", ["serve", "--cron", "0 3 * * *", "--timezone", "Mars/Olympus"])
    with pytest.raises(SystemExit) as e:
        serve.main()
    assert e.value.code == 2 and not served
    assert "--timezone 'Mars/Olympus': not an IANA time zone" in capsys.readouterr().err
    monkeypatch.setattr("sys.argv", ["serve", "--cron", "0 3 * * *"])
    serve.main()
    assert served[0]["schedule"].cron == "0 3 * * *" and served[0]["schedule"].timezone == "UTC"


def test_make_prefect_ui_on_another_port_tells_the_ui_where_its_api_is(tmp_path):
    """Issue #56: the Prefect UI on a port other than 4200 asked its API on 4200. `make prefect-ui PREFECT_PORT=N` (its
    recipe alone: `-o setup`, the venv is there) serves /ui-settings naming port N's API."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PREFECT_HOME": str(tmp_path)}  # the recipe sets its own; this keeps a stray one out
    proc = subprocess.Popen(["make", "-s", "-o", "setup", "prefect-ui", f"PREFECT_PORT={port}", f"CURDIR={tmp_path}"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline, settings = time.monotonic() + 120, None
        while time.monotonic() < deadline and settings is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ui-settings", timeout=5) as r:
                    settings = json.loads(r.read())
            except OSError:
                assert proc.poll() is None, "make prefect-ui exited"
                time.sleep(1)
        assert settings is not None, "no answer in 120 s"
        assert settings["api_url"] == f"http://127.0.0.1:{port}/api", settings
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


QUERY = """
import json
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

with get_client(sync_client=True) as c:
    arts = c.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["prmlab-study"])))
    runs = c.read_task_runs()
    print(json.dumps({"artifacts": [a.data for a in arts],
                      "tasks": [(r.name, r.run_count, r.state_name) for r in runs]}))
"""


@pytest.mark.parametrize("code, retried", [(2, False), (1, True)])
def test_a_stage_that_stops_the_flow_is_named_in_the_artifact_and_bad_input_is_not_retried(tmp_path, code, retried):
    """Issue #56: the pipeline flow over a DVC stage that stops with a one-line error. Exit 2 (bad input, as
    prmlab.stage exits) is not retried; any other failure is, once. Either way the `prmlab-study` artifact names the
    stage and its error line, and the flow fails."""
    import sys

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "params.yaml").write_text("profile: {toy: [toy], real: []}\n")
    (proj / "fail.py").write_text(f"import sys\nprint('[sample] error: params.yaml: sample.n: must be >= 1', file=sys.stderr)\n"
                                  f"sys.exit({code})\n")
    (proj / "dvc.yaml").write_text("stages:\n  sample:\n    cmd: python fail.py\n    deps: [fail.py]\n")
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'm.db'}"}
    env.pop("PREFECT_API_URL", None)
    for cmd in (["git", "init", "-q"], [str(Path(sys.executable).with_name("dvc")), "init", "-q"]):
        subprocess.run(cmd, cwd=proj, check=True, capture_output=True)
    run = subprocess.run([sys.executable, "-m", "flows.pipeline", "--project-dir", str(proj), "--stages", "sample"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    got = json.loads(subprocess.run([sys.executable, "-c", QUERY], cwd=ROOT, env=env, capture_output=True, text=True,
                                    check=True, timeout=120).stdout)
    (art,) = got["artifacts"]
    assert "stopped at stage sample" in art and "sample.n: must be >= 1" in art
    assert ("not retried" in art) is not retried
    (task,) = [t for t in got["tasks"] if t[0] == "dvc repro sample"]
    assert task[1] == (2 if retried else 1) and task[2] == "Failed", task
    assert "ERROR" in run.stdout + run.stderr and "sample.n: must be >= 1" in run.stdout + run.stderr
