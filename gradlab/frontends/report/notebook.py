"""The report inline in a notebook: `gradlab.check(...)` as the last line of a
cell displays its result as the HTML report (Jupyter, VS Code and Colab call
`_repr_html_`).

The page goes into an <iframe srcdoc=...>: the report's CSS cannot restyle the
notebook, the notebook's cannot restyle the report, and no script is needed. It
opens on the report's first screen: the verdict, what is wrong and where, and
the first failing check's card with its figure.
"""
import html

from gradlab.frontends.report.render import as_kind_results, render

HEIGHT_FAILING = 760   # px: the verdict, the failing card's message and the top of its figure
HEIGHT_PASSING = 520   # px: the verdict and the summary chips


def repr_html(results, *, student=None):
    kinds = as_kind_results(results)
    page = render(kinds, student=student)
    passed = all(k.passed for k in kinds)
    height = HEIGHT_PASSING if passed else HEIGHT_FAILING
    return (f'<iframe class="gradlab-report" srcdoc="{html.escape(page, quote=True)}" '
            f'style="width: 100%; height: {height}px; border: 1px solid #d0d7de; border-radius: 6px;" '
            f'title="gradlab report"></iframe>')
