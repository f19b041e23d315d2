"""Screenshot each tab of a running demo with its first example run (the README's pictures).

    python demo/app.py &                                  # serves http://127.0.0.1:7860
    python demo/screenshots.py --url http://127.0.0.1:7860 --out docs

writes ``docs/demo_track.png``, ``docs/demo_detect.png`` and ``docs/demo_forensics.png``. Each page is opened as
``URL/?tab=NAME&example=1`` (the app then runs that tab's example) and captured once the tab's status box
(``#<tab>-status``; the forensics tab's verdict) is filled in, plus a short pause for the video and 3D viewers to
draw.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from vision.demo.browser import Browser, BrowserError

__all__ = ["ready_selector", "capture_tabs", "main"]


def ready_selector(tab: str) -> str:
    """The text box that is filled in when ``tab``'s run has finished: every tab's ``#<tab>-status``."""
    return f"#{tab}-status textarea"


def capture_tabs(url: str, out_dir: str | Path, tabs: tuple[str, ...] | None = None, width: int = 1280,
                 height: int = 1300, timeout: float = 120.0, settle: float = 2.0,
                 prefix: str = "demo_") -> dict[str, Path]:
    """Open every tab of the demo at ``url`` with its example, wait for the result and save
    ``out_dir/<prefix><tab>.png``; returns tab -> path. ``tabs``: None for every tab of the demo
    (:func:`vision.demo.app.tabs`). Raises :class:`BrowserError` if a tab never finishes."""
    if tabs is None:
        from vision.demo.app import tabs as demo_tabs

        tabs = demo_tabs()
    out = Path(out_dir)
    paths = {}
    with Browser(timeout=timeout) as browser:
        for tab in tabs:
            browser.open(f"{url.rstrip('/')}/?tab={tab}&example=1", width=width, height=height)
            selector = ready_selector(tab)
            browser.wait_for(f"document.querySelector({selector!r})?.value?.length > 0", timeout=timeout)
            time.sleep(settle)
            paths[tab] = browser.screenshot(out / f"{prefix}{tab}.png")
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and capture every tab; 0 on success, 2 with one ``error:`` line when
    Chromium is missing or a tab never finishes."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:7860")
    parser.add_argument("--out", type=Path, default=Path("docs"))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1300)
    args = parser.parse_args(argv)
    try:
        for tab, path in capture_tabs(args.url, args.out, width=args.width, height=args.height).items():
            print(f"{tab}: {path}")
    except BrowserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
