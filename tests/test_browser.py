"""The reports as a reader sees them: rendered by real headless Chromium
(Debian's `chromium`, installed by .ci/run), with no console errors and the
key elements present. Screenshots of the first screen (1200 x 900) are kept
as artefacts in reports/browser/ (printed in the test output). What is on
the first screen is measured in the browser: a copy of the page gets a small
script that writes the layout (getBoundingClientRect of the elements a
student looks for, and the page's rendered text) into the DOM, which
--dump-dom returns. The report itself has no script. Skipped, with the
reason, where chromium is not installed."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ARTEFACTS = ROOT / "reports" / "browser"
SCREEN = (1200, 900)     # the first screen of a laptop browser window
# Written into a copy of the page: where the elements a student looks for are, once laid out.
PROBE = """<script>
window.addEventListener("load", function () {
  function box(el) { var r = el.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, height: r.height,
                                                                 text: el.innerText.slice(0, 400)}; }
  function all(sel) { return Array.prototype.map.call(document.querySelectorAll(sel), box); }
  var out = {verdict: all("#verdict"), wrong: all("#what-is-wrong li"), messages: all("#failures pre.message"),
             failure_images: all("#failures img"), images: all("img"), metric_labels: all("dl.metrics dt"),
             text: document.body.innerText};
  var pre = document.createElement("pre"); pre.id = "layout-probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""
JARGON = ("kink_resamples", "resolution", "module_calls", "replay_seed", "max_error")
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


@pytest.fixture(scope="module")
def chromium():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("chromium is not installed (Debian: apt-get install -y chromium); CI installs it")


def render_in_chromium(chromium, html_file, png, profile):
    """(DOM after load, Chromium's console lines) of one page; screenshot to `png`."""
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
             f"--window-size={SCREEN[0]},{SCREEN[1]}"]
    url = html_file.resolve().as_uri()
    dom = subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    shot = subprocess.run(flags + [f"--screenshot={png}", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0 and shot.returncode == 0, dom.stderr[-2000:] + shot.stderr[-2000:]
    console = [line for line in (dom.stderr + shot.stderr).splitlines() if ":CONSOLE" in line]
    return dom.stdout, console


def layout(chromium, html_file, profile):
    """What the browser laid out: positions of the key elements and the rendered text."""
    probe = html_file.with_name(html_file.stem + "-probe.html")
    probe.write_text(html_file.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={profile}",
             f"--window-size={SCREEN[0]},{SCREEN[1]}", "--dump-dom", probe.resolve().as_uri()]
    dom = subprocess.run(flags, capture_output=True, text=True, timeout=120).stdout
    start = dom.index('<pre id="layout-probe">') + len('<pre id="layout-probe">')
    import html
    return json.loads(html.unescape(dom[start:dom.index("</pre>", start)]))


def on_first_screen(boxes):
    return [b for b in boxes if b["height"] > 0 and b["top"] < SCREEN[1]]


def test_failing_and_passing_reports_in_chromium(chromium, tmp_path):
    student = EXAMPLES / "broken_attention.py"
    if not student.exists():
        pytest.skip(f"{student} is not in this checkout")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    # the failing report: the plugin under xdist, as a student runs it
    failing = tmp_path / "failing.html"
    (tmp_path / "pytest.ini").write_text("[pytest]\n")   # the student's folder, not this project's config
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q",
                          "--gradlab-impl", str(student), "--gradlab-report", str(failing)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and failing.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    # the passing report: `gradlab check attention --report` on the reference
    run = subprocess.run([sys.executable, "-m", "gradlab", "check", "attention", "--report"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    passing = tmp_path / "reports" / "attention.html"
    assert run.returncode == 0 and passing.exists(), run.stdout[-3000:] + run.stderr[-3000:]

    for name, page, verdict in (("failing", failing, "checks failed"), ("passing", passing, "checks passed")):
        png = ARTEFACTS / f"{name}.png"
        dom, console = render_in_chromium(chromium, page, png, tmp_path / f"profile-{name}")
        print(f"screenshot of the {name} report: {png}")
        assert console == [], console
        assert 'id="verdict"' in dom and verdict in dom and 'id="summary"' in dom
        assert "attention::gradient" in dom and "attention::smoke" in dom
        assert png.stat().st_size > 20_000           # a drawn page, not a blank one
        if name == "failing":
            assert 'id="failures"' in dom and "out_weight" in dom and 'src="data:image/png;base64,' in dom

        seen = layout(chromium, page, tmp_path / f"probe-{name}")
        assert on_first_screen(seen["verdict"])
        for jargon in JARGON:                       # every number has a plain label
            assert jargon not in seen["text"], jargon
        if name == "failing":
            # what is wrong and where: the check, the tensor, the cause, and the start of its figure
            wrong = on_first_screen(seen["wrong"])
            assert wrong and "attention::gradient" in wrong[0]["text"] and "out_weight" in wrong[0]["text"]
            message = on_first_screen(seen["messages"])
            assert message and "transpose" in message[0]["text"]
            assert on_first_screen(seen["failure_images"]), seen["failure_images"]
        else:
            # passing checks' figures are drawn, not collapsed: attention weights, causality, reference, ...
            drawn = [b for b in seen["images"] if b["height"] > 100]
            assert len(drawn) >= 4 and len(drawn) == len(seen["images"]), seen["images"]


NOTEBOOK_PROBE = """<script>
window.addEventListener("load", function () {
  var frame = document.querySelector("iframe.gradlab-report"), doc = frame.contentDocument, top = frame.getBoundingClientRect().top;
  var frameHeight = frame.getBoundingClientRect().height;
  var img = doc.querySelector("#failures img"), r = img ? img.getBoundingClientRect() : null;
  var out = {frame_top: top, frame_height: frameHeight, image_top: r ? r.top : null, image_height: r ? r.height : 0,
             text: doc.body.innerText.slice(0, 3000)};
  var pre = document.createElement("pre"); pre.id = "layout-probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def test_notebook_output_shows_the_failing_figure(chromium, tmp_path):
    """A result's _repr_html_ inside a page shaped like a notebook's output area: the
    failing check's figure is drawn inside the cell's output, not below a fold."""
    import gradlab
    student = EXAMPLES / "broken_attention.py"
    fragment = gradlab.check("attention", impl=str(student), checks=["gradient"], seed=2)._repr_html_()
    cell = ("<!DOCTYPE html><html><body><pre>In [3]: gradlab.check('attention', impl='broken_attention.py')"
            f"</pre><div class='output'>{fragment}</div>{NOTEBOOK_PROBE}</body></html>")
    page = tmp_path / "notebook.html"
    page.write_text(cell, encoding="utf-8")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    png = ARTEFACTS / "notebook.png"
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={SCREEN[0]},{SCREEN[1]}"]
    subprocess.run(flags + [f"--screenshot={png}", page.as_uri()], capture_output=True, timeout=120)
    print(f"screenshot of the notebook output: {png}")
    dom = subprocess.run(flags + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    import html
    start = dom.index('<pre id="layout-probe">') + len('<pre id="layout-probe">')
    seen = json.loads(html.unescape(dom[start:dom.index("</pre>", start)]))
    assert "out_weight" in seen["text"] and "checks failed" in seen["text"]
    # the figure starts inside the visible part of the output frame
    assert seen["image_height"] > 100 and seen["image_top"] < seen["frame_height"] - 100, seen
