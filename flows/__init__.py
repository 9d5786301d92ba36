"""Prefect orchestration of the DVC stages. Stages stay plain Python; flows only chain them."""

import os
from pathlib import Path

# Here, before any flow module imports prefect (it reads its settings then): Prefect's state and the
# temporary server's database stay inside the project, its server listens on 127.0.0.1 only, and it sends
# no telemetry (nothing leaves the machine at run time; offline, the server logged a failed send every
# 10 minutes). Each is a default the user's environment overrides.
os.environ.setdefault("PREFECT_HOME", str(Path(__file__).resolve().parents[1] / ".prefect"))
os.environ.setdefault("PREFECT_SERVER_API_HOST", "127.0.0.1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
