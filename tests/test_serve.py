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
