"""A real headless browser for the dashboard tests: Debian's Chromium driven by Playwright.

Chromium comes from the system's packages (`make browser`: `apt-get install -y chromium`), never from
`playwright install`; Playwright's Python package drives it through `executable_path`. Screenshots go
to test-artifacts/ (or $PRMLAB_TEST_ARTIFACTS), for a person to look at once per change.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

ARTIFACTS = Path(os.environ.get("PRMLAB_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts"))


def chromium() -> str:
    path = os.environ.get("PRMLAB_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        raise AssertionError("no Chromium: the dashboard tests need a real browser (`make browser`, i.e. "
                             "apt-get install -y chromium; or set PRMLAB_CHROMIUM to its path)")
    return path


@contextmanager
def page(width: int = 1500, height: int = 950):
    """A fresh browser profile (no local storage: what a first visit sees), one page."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


def screenshot(pg, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / f"{name}.png"
    pg.screenshot(path=str(out), full_page=True)
    return out
