"""The HTML report: one self-contained file (inline CSS, figures as data URIs,
no network, no JavaScript) from the same records the CLI and pytest use.

Importing this package imports jinja2 and matplotlib; the CLI and the pytest
plugin import it only when a report is asked for, so `gradlab --help` stays fast.

    from gradlab.frontends.report import write_report
    write_report(gradlab.check("attention"), "reports/attention.html")
"""
import os

from gradlab.frontends.report.render import render

__all__ = ["write_report", "render"]


def write_report(results, path, *, replay=None, title=None, student=None):
    """Render `results` (KindResult, RunResult, their dicts, or a list) to `path`,
    creating its folder. `student`: a name shown in the title and on every card.
    Returns the path written."""
    html = render(results, replay=replay, title=title, student=student)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8", errors="backslashreplace") as fh:   # a non-UTF-8 file name: \udce9
        fh.write(html)
    return path
