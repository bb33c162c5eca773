"""Headless Chromium for the viewer's checks: open a built page, time it, screenshot it.

    with headless_chromium() as driver:                  # Selenium + Debian's chromium/chromium-driver
        seconds = open_page(driver, out / "tasks/x.html")
        driver.save_screenshot("docs/viewer_task_page.png")

    python -m eval.viewer.browser PAGE.html OUT.png [--width 1500 --height 1000] [--click a1-S5]

Used by the tests (tests/eval/viewer), the benchmark (`eval/viewer/bench.py --browser`) and to
make the README screenshot. Needs `apt-get install -y chromium chromium-driver` and
`pip install selenium`; when either is missing the error says exactly that.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["INSTALL", "BrowserMissing", "headless_chromium", "open_page"]

INSTALL = (
    "install a headless browser for the viewer checks: `apt-get install -y chromium chromium-driver` "
    "(Debian) and `.venv/bin/pip install selenium`"
)
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


class BrowserMissing(RuntimeError):
    """Chromium, its driver or Selenium is not installed."""


def _find(names: tuple[str, ...], env: str) -> str | None:
    if os.environ.get(env):
        return os.environ[env] if Path(os.environ[env]).is_file() else None
    return next((p for p in map(shutil.which, names) if p), None)


@contextmanager
def headless_chromium(width: int = 1500, height: int = 1000) -> Iterator[Any]:
    """A Selenium Chrome driver on the system Chromium (override paths with CHROMIUM / CHROMEDRIVER)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        raise BrowserMissing(f"selenium is not installed; {INSTALL}") from None
    binary, driver_path = _find(CHROMIUM, "CHROMIUM"), _find(("chromedriver",), "CHROMEDRIVER")
    if binary is None or driver_path is None:
        missing = " and ".join(
            n for n, p in (("chromium", binary), ("chromedriver", driver_path)) if p is None
        )
        raise BrowserMissing(f"{missing} not found on PATH; {INSTALL}")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
        "--hide-scrollbars",
        "--allow-file-access-from-files",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver: Any, path: Path, fragment: str = "") -> float:
    """Load a page from disk and wait for its load event; returns the seconds it took."""
    start = time.perf_counter()
    driver.get(path.resolve().as_uri() + (f"#{fragment}" if fragment else ""))
    driver.execute_script("return document.readyState")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.viewer.browser", description="Screenshot a viewer page."
    )
    parser.add_argument("page", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--width", type=int, default=1500)
    parser.add_argument("--height", type=int, default=1000)
    parser.add_argument(
        "--click", default="", help="graph node to click first, e.g. a1-S5 (arm a1, state S5)"
    )
    args = parser.parse_args(argv)
    with headless_chromium(args.width, args.height) as driver:
        seconds = open_page(driver, args.page)
        if args.click:
            driver.find_element("css selector", f"svg g#{args.click} text").click()
            driver.execute_script("window.scrollTo(0, 0)")
        args.png.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(args.png))
    print(f"{args.png}: screenshot of {args.page} (opened in {seconds:.2f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
