"""The reports in a real browser (issue #22 item 2, #43 item 3): headless Chromium renders report.html
offline with no console errors and no network request, shows every figure the report draws, and every
time and size on the page reads in units with three significant digits. The run, sweep and compare pages
are laid out at 1400 px with no table cut off or running past the window, and saved as PNG screenshots
into ``$TAILCUT_SCREENSHOTS`` (a pytest temporary folder without it) to attach to an issue.

Chromium is a Debian package (``chromium``). CI sets ``TAILCUT_REQUIRE_REALNET=1`` and installs it
(``.ci/run``), so there a missing browser fails the test; elsewhere the test is skipped without it.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tailcut.report import RUN_TITLES

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
# Requests Chromium makes for itself (spell-check dictionaries, time sync) carry no origin; a page's own
# requests carry the page's origin, "null" for a file.
BROWSER_OWN = "not an origin"
TIMEOUT_S = 120


def _chromium() -> str:
    for name in BROWSERS:
        if found := shutil.which(name):
            return found
    why = "headless Chromium is needed to check the report (apt-get install chromium)"
    if os.environ.get("TAILCUT_REQUIRE_REALNET") == "1":
        pytest.fail(why)
    pytest.skip(why)


@dataclass
class Rendered:
    dom: str
    console: list[str]
    requests: list[str]
    screenshot: bytes


def _chromium_run(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [
        _chromium(),
        "--headless",
        "--disable-gpu",
        "--no-sandbox",  # CI runs as root, where Chromium refuses its sandbox
        "--no-first-run",
        f"--user-data-dir={profile}",
        # Nothing leaves the machine even if the page asked: the net log below shows whether it did.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--enable-logging=stderr",
        "--v=0",
        *extra,
        page.resolve().as_uri(),
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def render(page: Path, work: Path) -> Rendered:
    """Load ``page`` in headless Chromium twice: once for the DOM, console and network, once for pixels."""
    net_log = work / "net.json"
    dumped = _chromium_run(page, work / "profile-dom", "--dump-dom", f"--log-net-log={net_log}")
    console = [line for line in dumped.stderr.splitlines() if re.search(r":CONSOLE[:(]", line)]
    events = json.loads(net_log.read_text())["events"]
    requests = sorted(
        {
            e["params"]["url"]
            for e in events
            if "url" in e.get("params", {}) and e["params"].get("initiator", BROWSER_OWN) != BROWSER_OWN
        }
    )
    shot = work / "shot.png"
    _chromium_run(
        page, work / "profile-shot", f"--screenshot={shot}", "--window-size=1200,2400", "--hide-scrollbars"
    )
    return Rendered(dumped.stdout, console, requests, shot.read_bytes())


class _Page(HTMLParser):
    """What a reader sees of the page: figures, images, external references and text."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[dict[str, object]] = []
        self.images = 0
        self.references: list[str] = []
        # The values shown; the definitions paragraph's round thresholds ("1 MB") are not values.
        self.text: list[str] = []
        self._caption = False
        self._definitions = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "figure":
            self.figures.append({"caption": "", "svg": 0})
        elif tag == "figcaption":
            self._caption = True
        elif tag == "svg" and self.figures:
            self.figures[-1]["svg"] = int(self.figures[-1]["svg"]) + 1  # type: ignore[call-overload]
        elif tag == "img":
            self.images += 1
        elif tag == "p" and ("class", "metrics") in attrs:
            self._definitions = True
        # Inline figures only reference their own elements (#id) or carry their data (data:).
        for name, value in attrs:
            if name in ("src", "href", "xlink:href") and value and not value.startswith(("#", "data:")):
                self.references.append(f"<{tag} {name}={value!r}>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "figcaption":
            self._caption = False
        elif tag == "p":
            self._definitions = False

    def handle_data(self, data: str) -> None:
        if self._caption:
            self.figures[-1]["caption"] = str(self.figures[-1]["caption"]) + data
        if data.strip() and not self._definitions:
            self.text.append(data.strip())


def _parse(dom: str) -> _Page:
    page = _Page()
    page.feed(dom)
    return page


def _blank(png: bytes) -> bool:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        colors = image.convert("RGB").getcolors(maxcolors=1 << 16)
    # getcolors gives None past maxcolors: a page of figures has that many shades, a blank one has 1.
    return colors is not None and len(colors) < 16


# A number with a time or size unit, as display.py writes them.
_WITH_UNIT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) (ns|us|ms|s|B|KB|MB|GB)\b")
# A whole word: the provenance line's hexadecimal digests (config sha256, build commit) hold runs such
# as "2e7" that are no number.
_EXPONENT = re.compile(r"(?<![\w.])\d(?:\.\d+)?e[+-]?\d+(?![\w.])")


def _three_significant_digits(number: str) -> bool:
    """As display.py writes them: "0", "332", "100", "1.05", "40.0", "0.500"."""
    if "." not in number:
        return number == "0" or len(number) == 3
    return len(number.replace(".", "").lstrip("0")) == 3


@pytest.fixture(scope="module")
def browser_page(tiny_result, tmp_path_factory: pytest.TempPathFactory) -> tuple[Rendered, _Page]:
    out, _ = tiny_result
    rendered = render(out / "report.html", tmp_path_factory.mktemp("browser"))
    return rendered, _parse(rendered.dom)


def test_the_report_renders_every_figure(browser_page) -> None:
    rendered, page = browser_page
    assert [f["caption"] for f in page.figures] == list(RUN_TITLES)
    assert [f["svg"] for f in page.figures] == [1] * len(RUN_TITLES), "one inline <svg> per figure"
    assert page.images == 0, "figures are inline SVG, nothing to load"
    assert rendered.dom.count("<svg") == len(page.figures)
    assert not _blank(rendered.screenshot)


def test_the_report_is_offline_and_error_free(browser_page) -> None:
    rendered, page = browser_page
    assert rendered.console == []
    assert rendered.requests == [], "the page fetched something: it must work offline"
    assert page.references == []
    # Figures clip by url(#id), their own elements; anything else in url() would be fetched.
    assert not re.search(r"<script|<link|@import|url\((?!#)", rendered.dom, re.IGNORECASE)


def test_times_and_sizes_read_in_units_with_three_digits(browser_page) -> None:
    _, page = browser_page
    text = " ".join(page.text)
    assert not _EXPONENT.search(text), _EXPONENT.search(text)
    shown = _WITH_UNIT.findall(text)
    assert {unit for _, unit in shown} & {"ns", "us", "ms", "s"}, shown
    wrong = [f"{n} {u}" for n, u in shown if not _three_significant_digits(n)]
    assert wrong == []
    # The axes of time read in units too (not "10^3" or "FCT (us)" with bare numbers).
    assert not re.search(r"\((?:us|ms|ns)\)", text), "a time axis labelled with a unit instead of ticks"


# --- layout and screenshots of every report page ------------------------------------------------------------

SHOT_WIDTH = 1400
# Appended to a copy of a page (the page itself has no script): measures, once laid out at SHOT_WIDTH, the
# tables that run past the window or need their box's scroll bar, and the page's size, into the DOM.
_PROBE = """<pre id="tailcut-layout"></pre><script>
(() => {
  const width = document.documentElement.clientWidth;
  const cut = [...document.querySelectorAll("table")].filter(t => {
    const box = t.parentElement;
    return t.getBoundingClientRect().right > width + 1 || box.scrollWidth > box.clientWidth + 1;
  }).map(t => t.querySelector("th") ? t.querySelector("th").textContent : "?");
  document.getElementById("tailcut-layout").textContent = JSON.stringify({
    width: width, tables: document.querySelectorAll("table").length, cut: cut,
    page_width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight,
  });
})();
</script>"""


def layout(page: Path, work: Path) -> dict[str, object]:
    """Lay ``page`` out at SHOT_WIDTH in Chromium and return what :data:`_PROBE` measured."""
    import html

    probe = work / f"{page.parent.name}-layout.html"
    probe.write_text(page.read_text().replace("</body>", _PROBE + "</body>"))
    dumped = _chromium_run(probe, work / "profile-layout", "--dump-dom", f"--window-size={SHOT_WIDTH},1000")
    found = re.search(r'<pre id="tailcut-layout">(.*?)</pre>', dumped.stdout, re.DOTALL)
    assert found, dumped.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


def screenshot(page: Path, work: Path, target: Path, height: int) -> bytes:
    """The whole page at SHOT_WIDTH (the window as tall as the page, at most 16000 px) into ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    size = f"--window-size={SHOT_WIDTH},{min(max(height, 600), 16000)}"
    _chromium_run(page, work / "profile-full", f"--screenshot={target}", size, "--hide-scrollbars")
    return target.read_bytes()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("TAILCUT_SCREENSHOTS")
    return Path(where) if where else tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def report_pages(tiny_result, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three kinds of report page, from tiny experiments: a run, a sweep (two seeds per point, so it
    draws bands) and a comparison (the test suite's mini suite)."""
    import sys

    import tailcut
    from conftest import SWEEP_KEY, SWEEP_VALUES, TINY
    from tailcut.compare import compare

    sys.path.insert(0, str(Path(__file__).parent))
    from test_compare import mini

    work = tmp_path_factory.mktemp("pages")
    out, _ = tiny_result
    sweep = tailcut.sweep(TINY, {SWEEP_KEY: list(SWEEP_VALUES)}, seeds=2, jobs=2, out=work / "sweep")
    compared = compare(mini(), work / "compare", scale="ci", jobs=2)
    assert sweep.path is not None
    return {
        "run": out / "report.html",
        "sweep": sweep.path / "report.html",
        "compare": compared.path / "report.html",  # type: ignore[operator]
    }


@pytest.mark.parametrize("kind", ["run", "sweep", "compare"])
def test_report_pages_fit_the_window_and_are_saved(
    kind: str, report_pages, screenshots: Path, tmp_path: Path
) -> None:
    page = report_pages[kind]
    measured = layout(page, tmp_path)
    assert SHOT_WIDTH - 20 <= measured["width"] <= SHOT_WIDTH, measured  # the window, less a scroll bar
    assert measured["tables"], "every report page has tables"
    assert measured["cut"] == [], f"tables cut at {SHOT_WIDTH} px: {measured['cut']}"
    assert measured["page_width"] <= measured["width"], "the page runs past the window's width"
    text = page.read_text()
    assert "<p class='provenance'>" in text and "config digest" in text and "commit " in text
    shot = screenshot(page, tmp_path, screenshots / f"{kind}-report.png", int(measured["height"]))  # type: ignore[call-overload]
    assert not _blank(shot)


def test_the_checks_catch_a_broken_page(tmp_path: Path) -> None:
    """The browser checks above can fail: a page with a script error, an external image and no figure."""
    broken = tmp_path / "broken.html"
    broken.write_text(
        "<!DOCTYPE html><html><body><p>3.318e+05 ns</p>"
        "<img src='https://example.com/figure.png'>"
        "<script>throw new Error('boom')</script></body></html>"
    )
    rendered = render(broken, tmp_path)
    page = _parse(rendered.dom)
    assert any("Uncaught Error: boom" in line for line in rendered.console)
    assert rendered.requests == ["https://example.com/figure.png"]
    assert page.references and page.figures == []
    assert _EXPONENT.search(" ".join(page.text))


def test_the_layout_check_catches_a_cut_table(tmp_path: Path) -> None:
    """A table wider than the window in a box that does not scroll is reported."""
    wide = "".join(f"<th>column{i:03d}</th>" for i in range(200))
    page = tmp_path / "wide" / "report.html"
    page.parent.mkdir()
    page.write_text(f"<!DOCTYPE html><html><body><div><table><tr>{wide}</tr></table></div></body></html>")
    measured = layout(page, tmp_path)
    assert measured["cut"] == ["column000"] and measured["page_width"] > measured["width"]


def test_a_blank_screenshot_is_caught(tmp_path: Path) -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), "white").save(buffer, format="PNG")
    assert _blank(buffer.getvalue())


def test_a_missing_browser_fails_where_ci_requires_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _: None)
    monkeypatch.setenv("TAILCUT_REQUIRE_REALNET", "1")
    with pytest.raises(pytest.fail.Exception, match="headless Chromium is needed"):
        _chromium()
    monkeypatch.delenv("TAILCUT_REQUIRE_REALNET")
    with pytest.raises(pytest.skip.Exception):
        _chromium()
