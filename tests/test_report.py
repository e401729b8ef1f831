"""The HTML report: self-contained, escaped, deterministic, generic over the
views checks attach; and the CLI's --report and progress line."""
import io
import re
import subprocess
import sys

import numpy as np
import pytest

from gradlab.frontends import cli
from gradlab.execution.plan import Plan
from gradlab.contract.records import ERROR, FAIL, PASS, SKIP, CheckRecord, KindResult, curve, heatmap, table, text


def weights(T=5):
    w = np.tril(np.random.default_rng(0).random((T, T)))
    return (w / w.sum(1, keepdims=True)).tolist()


def failing_result(impl="student.py"):
    err = np.full((6, 9), 1e-11)
    err[2, 4] = 3e-3
    views = [table("per tensor", [{"tensor": "qkv_weight", "shape": [6, 9], "error": 3e-3, "ok": False}]),
             heatmap("|analytical - numerical| of qkv_weight", err.tolist(), "column", "row"),
             heatmap("attention weights, batch 0, head 0", weights(), "key", "query", mask_upper=True),
             curve("overfit loss", {"yours": [2.0, 1.9, 1.9, 1.9], "reference": [2.0, 1.2, 0.6, 0.2]}),
             text("diagnosis", "analytical ~ numerical.T: transposed"),
             {"type": "sparkline", "title": "a view type this report does not know", "data": [1, 2]}]
    checks = [CheckRecord("smoke", PASS, "builds", {"parameters": 4}),
              CheckRecord("gradient", FAIL, "attention: gradient of 'qkv_weight' is wrong </pre><script>alert(1)</script>",
                          {"max_error": 3e-3, "tolerance": 1e-6}, {"views": views, "traceback": "line 3 in backward"}),
              CheckRecord("causality", ERROR, "attention: forward raised ValueError: <img src=x onerror=alert(2)>"),
              CheckRecord("overfit", SKIP, "not run")]
    return KindResult("attention", impl, 7, {"batch_size": 2, "seq_len": 5}, checks)


def passing_result():
    return KindResult("layernorm", "reference", 7, {"d_model": 12},
                      [CheckRecord("smoke", PASS, "builds"),
                       CheckRecord("gradient", PASS, "3 tensors match", {"max_error": 1e-10},
                                   {"views": [heatmap("|analytical - numerical| of gamma", [[1e-11, 2e-11]])]})])


@pytest.fixture(scope="module")
def render():
    from gradlab.frontends.report import render
    return render


def test_student_text_cannot_inject_markup(render):
    html = render([failing_result(impl="<b>mine</b>.py")])
    assert "<script" not in html and "<img src=x" not in html and "<b>mine" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;mine&lt;/b&gt;.py" in html


def test_self_contained_and_failures_first(render):
    html = render([failing_result(), passing_result()], replay="gradlab check all --seed 7")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)   # nothing from the network
    assert "<script" not in html and "<link" not in html
    assert html.index('id="failures"') < html.index('id="summary"') < html.index('id="details"')
    assert html.count("data:image/png;base64,") == 4      # three heatmaps and one curve
    assert "gradlab check all --seed 7" in html and "2 of 6 checks did not pass" in html
    # every view type is shown: unknown types and non-view details as text, never dropped
    for words in ("a view type this report does not know", "traceback", "line 3 in backward",
                  "transposed", "per tensor", "error along a random direction"):
        assert words in html


def test_passing_report_is_short(render):
    html = render([passing_result()])
    assert 'id="failures"' not in html and "All 2 checks passed" in html
    assert "<details class=\"check pass\"" in html and " open>" not in html   # passing checks collapsed


def test_same_views_give_the_same_bytes(render):
    from gradlab.frontends.report import figures
    view = failing_result().checks[1].details["views"][2]
    first, second = figures.heatmap_png(view), figures.heatmap_png(view)
    assert first == second and first.startswith(b"\x89PNG") and b"matplotlib" not in first
    c = failing_result().checks[1].details["views"][3]
    assert figures.curve_png(c) == figures.curve_png(c)
    assert render([failing_result()]) == render([failing_result()])


def test_malformed_view_does_not_cost_the_report(render):
    bad = KindResult("ffn", "x.py", 0, {}, [CheckRecord("gradient", FAIL, "wrong", {},
                                                         {"views": [heatmap("ragged", [[1, 2], [3]])]})])
    html = render([bad])
    assert "could not be drawn" in html and "ragged" in html


def test_cli_report_default_path(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "attention", "--checks", "gradient", "--seed", "4", "--report"]) == 0
    out = capsys.readouterr().out
    assert "report: reports/attention.html" in out and "\x1b" not in out   # no progress line off a terminal
    html = (tmp_path / "reports" / "attention.html").read_text()
    assert "attention::gradient" in html and "gradlab check attention --checks gradient --seed 4" in html


def test_cli_report_default_path_of_several_kinds_is_the_file_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "linear,layernorm", "--checks", "shapes", "--seed", "4", "--report"]) == 0
    assert "report: reports/all.html" in capsys.readouterr().out
    assert [p.name for p in (tmp_path / "reports").iterdir()] == ["all.html"]


def test_progress_line_only_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.setattr(cli.Progress, "DELAY", 0.0)
    result = KindResult("attention", "reference", 0, {}, [CheckRecord("smoke", PASS, "builds")])
    tty, pipe = Terminal(), io.StringIO()
    for stream in (tty, pipe):
        progress = cli.Progress(stream, Plan(kinds="attention", seed=0))
        progress.update(result)
        progress.clear()
    assert "[1 done," in tty.getvalue() and "running attention::" in tty.getvalue()
    assert tty.getvalue().endswith("\r\x1b[K")          # cleared, so the summary starts on a clean line
    assert pipe.getvalue() == ""


def test_cli_imports_no_report_libraries():
    code = ("import sys, gradlab.frontends.cli\n"
            "try:\n    gradlab.frontends.cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('matplotlib', 'jinja2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("[]")


# ---- the report as a student reads it -------------------------------------------

def test_metrics_have_plain_labels_and_bookkeeping_is_hidden(render):
    record = CheckRecord("gradient", FAIL, "wrong", {"max_error": 0.2, "tolerance": 3e-10, "kink_resamples": 0,
                                                     "resolution": 1e-7, "module_calls": 314, "step": 3e-6,
                                                     "new_number": 4})
    html = render([KindResult("ffn", "x.py", 0, {}, [record])])
    metrics = html[html.index('<dl class="metrics">'):]
    metrics = metrics[:metrics.index("</dl>")]
    for jargon in ("kink_resamples", "resolution", "module_calls", "max_error", "314", "3.000e-06"):
        assert jargon not in metrics, jargon
    assert "error along a random direction" in metrics and "tolerance" in metrics and "new number" in metrics


LONG = ("attention: gradient of 'out_weight' is wrong: worst at index (0, 9) (row 0 = context head 0, dim 0; "
        "output feature 9): analytical 11.8055, numerical -0.854301 (error 0.38 of the gradient's size, tolerance "
        "2.3e-10); 132 of 144 elements are off. The gradient of 'out_weight' is the transpose of the right one: for "
        "y = x @ W the weight gradient is x.T @ grad_out, not grad_out.T @ x")


def test_the_verdict_cuts_a_long_line_at_a_clause_not_inside_a_number(render):
    # the page's CSS ellipsis cut the verdict's line at "numerical -...", half a number
    html = render([KindResult("attention", "x.py", 0, {}, [CheckRecord("gradient", FAIL, LONG)])])
    verdict = html[html.index('id="what-is-wrong"'):]
    line = re.search(r"<li>(.*?)</li>", verdict, re.S).group(1)
    assert line.endswith("132 of 144 elements are off. \u2026") and "transpose" not in line
    assert "ul.wrong li { overflow: hidden; text-overflow: ellipsis" not in html   # the browser cuts nothing


@pytest.mark.parametrize("limit, end", [(120, "output feature 9) \u2026"), (170, "analytical 11.8055 \u2026"),
                                        (1000, "not grad_out.T @ x")])
def test_shortened_stops_where_a_reader_can(limit, end):
    from gradlab.frontends.report.render import shortened
    line = shortened(LONG, limit)
    assert line.endswith(end) and len(line) <= limit + 2, line


def _metric_keys(tree):
    """The literal keys of every metrics dict a source file builds: `metrics = {...}`, `metrics["k"] = ...`,
    `metrics.update({...})`, and the dict passed to Outcome / CheckFailure / CheckRecord (or as metrics=)."""
    import ast

    def keys(node):
        if isinstance(node, ast.Dict):
            return {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        return set()

    def is_metrics(node):
        return isinstance(node, ast.Name) and "metrics" in node.id
    found = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign):
            if any(is_metrics(t) for t in n.targets):
                found |= keys(n.value)
            found |= {t.slice.value for t in n.targets if isinstance(t, ast.Subscript) and is_metrics(t.value)
                      and isinstance(t.slice, ast.Constant)}
        elif isinstance(n, ast.Call):
            name = getattr(n.func, "id", getattr(n.func, "attr", None))
            if name == "update" and is_metrics(n.func.value) and n.args:
                found |= keys(n.args[0])
            at = {"Outcome": 1, "CheckFailure": 1, "CheckRecord": 3}.get(name)
            if at is not None and len(n.args) > at:
                found |= keys(n.args[at])
            found |= {k for kw in n.keywords if kw.arg == "metrics" for k in keys(kw.value)}
    return found


def test_every_metric_a_check_records_has_a_plain_label():
    # chunking's peak_bytes_large, init_stats's alpha, copy_task's loss_first, ... showed as raw keys
    import ast
    from pathlib import Path
    import gradlab
    from gradlab.frontends.report.labels import HIDDEN, LABELS
    root = Path(gradlab.__file__).resolve().parent.parent
    sources = sorted((root / "checks").glob("*.py")) + sorted((root / "gradlab").rglob("*.py"))
    keys = set().union(*(_metric_keys(ast.parse(p.read_text())) for p in sources))
    assert {"max_error", "peak_bytes_large", "alpha", "loss_first", "padded_keys", "applies"} <= keys  # it reads them
    assert sorted(k for k in keys if k not in LABELS and k not in HIDDEN) == []


def test_gradient_card_states_one_tolerance():
    import gradlab
    from pathlib import Path
    broken = Path(__file__).resolve().parents[1] / "examples" / "broken_attention.py"
    record = gradlab.check("attention", impl=str(broken), checks=["gradient"], seed=3)["gradient"]
    assert record.status == FAIL
    stated = re.findall(r"tolerance ([0-9.e+-]+)", record.message)
    assert stated == [f"{record.metrics['tolerance']:.1e}"], (stated, record.metrics["tolerance"])
    views = record.details["views"]
    worst = [v for v in views if v["type"] == "table" and v["title"].startswith("worst elements")]
    maps = [v for v in views if v["type"] == "heatmap"]
    assert worst and maps, [(v["type"], v.get("title")) for v in views]     # else the lines below check nothing
    for view in worst:
        assert view["rows"] and all("tolerance" not in row for row in view["rows"])
    for view in maps:
        assert view["tolerance"] > 0      # drawn against the tolerance: roundoff shows as equal


def _red_pixels(png):
    import matplotlib.image
    rgb = matplotlib.image.imread(io.BytesIO(png))[..., :3]
    rgb = rgb[:, :int(rgb.shape[1] * 0.8)]      # the cells, not the colour bar at the right
    return int(np.sum((rgb[..., 0] - rgb[..., 1] > 0.25) & (rgb[..., 0] - rgb[..., 2] > 0.25)))


def test_roundoff_is_drawn_as_equal():
    from gradlab.frontends.report import figures
    roundoff = np.abs(np.random.default_rng(0).standard_normal((5, 12))) * 1e-16
    assert _red_pixels(figures.heatmap_png(heatmap("d", roundoff.tolist(), tolerance=1e-9))) == 0
    one_wrong = roundoff.copy()
    one_wrong[2, 3] = 1e-6                   # 1000 x the tolerance: one red cell
    assert _red_pixels(figures.heatmap_png(heatmap("d", one_wrong.tolist(), tolerance=1e-9))) > 200
    exact = np.zeros((5, 12))                # exact zeros: equal too, not "missing"
    assert _red_pixels(figures.heatmap_png(heatmap("d", exact.tolist(), tolerance=1e-9))) == 0


LABEL_VIEWS = [
    heatmap("gradient error", (np.random.default_rng(0).standard_normal((64, 64)) * 1e-3).tolist(),
            tolerance=1e-4, xlabel="column", ylabel="row"),
    heatmap("attention", np.random.default_rng(1).random((8, 8)).tolist(), mask_upper=True, xlabel="key",
            ylabel="query", xticklabels=["<bos>", "tokenisation", "cat"] + list("abcde"),
            yticklabels=["<bos>", "tokenisation", "cat"] + list("abcde")),
    heatmap("a bias", (np.random.default_rng(2).standard_normal((1, 10)) * -1e5).tolist(), xlabel="j"),
    heatmap("many tokens", np.random.default_rng(3).random((20, 20)).tolist(), xlabel="key", ylabel="query",
            xticklabels=[f"longer_token_{i}" for i in range(20)], yticklabels=[f"tok{i}" for i in range(20)]),
    heatmap("spread", (np.random.default_rng(4).random((1000, 12)) * 10.0 ** -np.arange(12)).tolist()),
    heatmap("tiny", (np.random.default_rng(5).standard_normal((3, 3)) * 3e-5).tolist(), xlabel="j", ylabel="i"),
]


LABEL_VIEWS += [
    curve("loss", {"train": list(np.exp(-np.arange(60) / 10)), "val": list(np.exp(-np.arange(60) / 12))},
          ylabel="loss"),
    curve("small", {"": list(2.5e-4 + 1e-5 * np.sin(np.arange(40)))}, ylabel="lr"),
    curve("large", {"norm": list(-123456.0 * np.arange(300))}, ylabel="gradient norm", xlabel="step"),
]


@pytest.mark.parametrize("view", LABEL_VIEWS, ids=lambda v: v["title"])
def test_figure_labels_stay_inside_the_image(view):
    """The margins are worked out from the labels' lengths (no tight_layout): every tick label,
    axis label and title is drawn inside the image."""
    from gradlab.frontends.report import figures
    fig = (figures.heatmap_figure if view["type"] == "heatmap" else figures.curve_figure)(view)
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    box = fig.bbox
    for ax in fig.axes:      # the heatmap and its colour bar, with every label drawn on them
        e = ax.get_tightbbox(renderer)
        assert e.x0 >= box.x0 - 1 and e.x1 <= box.x1 + 1 and e.y0 >= box.y0 - 1 and e.y1 <= box.y1 + 1, (e, box)


def test_small_tensors_get_readable_numbers_or_none():
    from gradlab.frontends.report import figures
    assert figures.annotates(5, 5) and figures.annotates(8, 8) and figures.annotates(1, 8)
    assert not figures.annotates(1, 36)      # a bias of 36: the numbers would overlap
    assert not figures.annotates(9, 9)


def test_student_name_in_title_and_on_every_card(render):
    html = render([failing_result(), passing_result()], student="Ada <Lovelace>")
    assert "<title>gradlab report for Ada &lt;Lovelace&gt;</title>" in html
    assert html.count('<span class="student">Ada &lt;Lovelace&gt;</span>') == 6
    assert "Ada" not in render([passing_result()])


def test_passing_figures_are_visible_when_text_is_collapsed(render):
    html = render([passing_result()])
    card = html[html.index('<div class="card pass">', html.index("layernorm::gradient") - 400):]
    details_end = card.index("</details>")
    assert "data:image/png" not in card[:details_end]          # not hidden in the collapsed text...
    assert '<div class="figures">' in card and "data:image/png" in card[details_end:]   # ...but beside it


def test_failing_banner_says_what_and_where(render):
    html = render([failing_result()])
    banner = html[html.index('id="verdict"'):html.index("</ul>")]
    assert "attention::gradient" in banner and "qkv_weight" in banner and "attention::causality" in banner


def test_a_report_of_several_files_names_the_file_in_its_verdict(render):
    # the pytest plugin's report of several --gradlab-impl files said "attention::gradient: ..." with no file,
    # and a file that did not load was "(load)::load" (its pytest item is bob.py::load)
    load = KindResult("(load)", "bob.py", 7, {}, [CheckRecord("load", ERROR, "bob.py:3: syntax error")])
    html = render([failing_result("alice.py"), load])
    banner = html[html.index('id="verdict"'):html.index("</ul>")]
    assert re.search(r'alice\.py</span> <a href="#[^"]+">attention::gradient</a>', banner), banner
    assert re.search(r'bob\.py</span> <a href="#[^"]+">load</a>: bob\.py:3: syntax error', banner), banner
    assert "(load)::" not in html


# ---- in a notebook ---------------------------------------------------------------------

def _srcdoc(fragment):
    import html as html_lib
    m = re.search(r'<iframe class="gradlab-report" srcdoc="([^"]*)"', fragment)
    assert m, fragment[:300]
    return html_lib.unescape(m.group(1))


def test_a_result_shows_as_the_report_in_a_notebook():
    import gradlab
    from pathlib import Path
    broken = Path(__file__).resolve().parents[1] / "examples" / "broken_attention.py"
    failing = gradlab.check("attention", impl=str(broken), checks=["gradient"], seed=1)
    fragment = failing._repr_html_()
    assert fragment.startswith("<iframe") and "<script" not in fragment
    page = _srcdoc(fragment)
    # the failing check's card is open, with its figure, under the verdict
    assert 'id="failures"' in page and "out_weight" in page and "1 of 2 checks failed" in page
    card = page[page.index('id="failures"'):page.index('id="summary"')]
    assert "data:image/png;base64," in card
    assert "height: 760px" in fragment
    passing = gradlab.check("layernorm", checks=["gradient"], seed=1)
    assert "All 2 checks passed" in _srcdoc(passing._repr_html_())
    run = gradlab.check("all", checks=["smoke"], seed=1)        # RunResult too
    assert "checks passed" in _srcdoc(run._repr_html_())


def test_a_run_that_judged_nothing_is_not_shown_as_passed(tmp_path):
    """Every check skipped (float16 for an optimizer): the banner read 'All 5 checks passed (5 skipped)'."""
    import gradlab
    from gradlab.frontends.report import write_report
    page = open(write_report(gradlab.check("adam", seed=0, dtype="float16", eps=1e-5), str(tmp_path / "r.html"))).read()
    assert "Nothing was judged" in page and "checks passed" not in page
    page = open(write_report(gradlab.check("adam", seed=0), str(tmp_path / "ok.html"))).read()
    assert "All 5 checks passed" in page and "Nothing was judged" not in page


def test_a_weight_on_the_future_is_drawn_not_greyed():
    """The attention heatmap greys the future (j > i) only where its weight is 0: a leak reported as 'weight
    0.61 on future position 1' was painted grey like a masked cell, invisible in the figure that showed it."""
    from gradlab.frontends.report.figures import heatmap_figure
    leaking = [[0.4, 0.6, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]
    fig = heatmap_figure({"type": "heatmap", "data": leaking, "mask_upper": True})
    shown = fig.axes[0].images[0].get_array()
    assert shown.mask.tolist() == [[False, False, True], [False, False, True], [False, False, False]]
    assert "weight on the future" in fig.axes[0].get_title()
    clean = heatmap_figure({"type": "heatmap", "data": [[1.0, 0.0], [0.5, 0.5]], "mask_upper": True})
    assert clean.axes[0].images[0].get_array().mask.tolist() == [[False, True], [False, False]]
    assert "weight on the future" not in clean.axes[0].get_title()
