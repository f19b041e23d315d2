"""The demo in a real browser: headless Chromium (Debian package ``chromium``) opens each tab with its example
run, waits for the result to appear in the page and saves a screenshot. Skipped, with the reason and the install
command, when no Chromium is installed (before the demo's checkpoints are trained); CI (.ci/run) installs it."""

from __future__ import annotations

import pytest

from vision.demo.browser import find_chromium

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        find_chromium() is None,
        reason="Chromium is not installed, so the headless-browser demo tests do not run; install it with "
               "`sudo apt-get install -y chromium` (Debian/Ubuntu)"),
]


def test_each_tab_renders_its_example_in_chromium(demo_url, tmp_path_factory):
    import cv2

    from vision.demo.screenshots import capture_tabs

    out = tmp_path_factory.mktemp("screenshots")
    paths = capture_tabs(demo_url, out, timeout=180, settle=0.5)
    for tab, path in paths.items():
        image = cv2.imread(str(path))
        assert image is not None and image.shape[1] == 1280 and image.shape[0] >= 800, tab
        assert image.std() > 10, f"{tab}: the screenshot is blank"
        print(f"screenshot of the {tab} tab: {path}")


def test_a_click_on_the_frame_adds_a_point_prompt(demo_url):
    """The Track tab's click-to-prompt: a click at the middle of the shown frame appends a positive point for
    object 1 on frame 0 at the frame's middle pixel (the synthetic example is 128 x 128)."""
    import re

    from vision.demo.browser import Browser

    prompts = "document.querySelector('#track-prompts textarea').value"
    with Browser(timeout=180) as browser:
        browser.open(f"{demo_url.rstrip('/')}/?tab=track&example=1")
        browser.wait_for("document.querySelector('#track-status textarea')?.value?.length > 0", timeout=180)
        browser.wait_for("document.querySelector('#track-frame img')?.complete", timeout=60)
        before = browser.evaluate(prompts).splitlines()
        browser.click("#track-frame img")
        browser.wait_for(f"{prompts}.split('\\n').length > {len(before)}", timeout=30)
        last = browser.evaluate(prompts).splitlines()[-1]
    match = re.fullmatch(r"object 1 frame 0 positive (\d+),(\d+)", last)
    assert match, last
    assert abs(int(match[1]) - 64) <= 2 and abs(int(match[2]) - 64) <= 2
