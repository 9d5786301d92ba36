"""flows.serve reads a cron in a named time zone (UTC unless told) and rejects an unknown zone up front."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_unknown_time_zone_is_refused_before_anything_is_served():
    p = subprocess.run([sys.executable, "-m", "flows.serve", "--cron", "0 3 * * *", "--timezone", "Mars/Olympus"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert "--timezone 'Mars/Olympus': not an IANA time zone" in p.stderr

