"""The reports as a reader sees them: rendered by real headless Chromium
(Debian's `chromium`, installed by .ci/run), with no console errors and the
key elements present. Screenshots are kept as artefacts in
reports/browser/ (printed in the test output). Skipped, with the reason,
where chromium is not installed."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ARTEFACTS = ROOT / "reports" / "browser"
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
             f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--window-size=1200,2000"]
    url = html_file.resolve().as_uri()
    dom = subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    shot = subprocess.run(flags + [f"--screenshot={png}", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0 and shot.returncode == 0, dom.stderr[-2000:] + shot.stderr[-2000:]
    console = [line for line in (dom.stderr + shot.stderr).splitlines() if ":CONSOLE" in line]
    return dom.stdout, console


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
