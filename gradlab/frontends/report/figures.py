"""Figures for the HTML report: heatmaps and curves drawn with matplotlib's
object API (Figure + FigureCanvasAgg, never pyplot, so no global state and no
GUI backend), returned as PNG bytes with fixed metadata: the same view gives
the same bytes, run after run."""
import base64
import io
import math
import re

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LogNorm, Normalize
from matplotlib.figure import Figure

DPI = 100
# PNG text chunks matplotlib would write ("Software: matplotlib version ...");
# None drops them, so the bytes do not depend on the installed version.
PNG_METADATA = {"Software": None}
MASKED = "#d0d0d0"       # the colour of masked (future) cells
WITHIN = "#e6f4ea"       # |difference| within the tolerance: drawn as equal (pale green)
ANNOTATE_MAX_CELLS = 64  # print values in the cells of matrices up to 8 x 8...
ANNOTATE_MIN_CELL = 0.4  # ...whose cells are at least this wide (inches), so the numbers never overlap
# Margins are worked out from the labels' lengths (inches per character at the tick labels' font sizes, a
# little wide) instead of by fig.tight_layout(), which lays out every text once more: a third of a
# heatmap's cost, and grading draws one for every failing check of every student.
CHAR = {8: 0.075, 10: 0.09}  # width of one character at 8 and 10 pt (DejaVu Sans, rounded up)
LINE = {8: 0.15, 10: 0.19}   # height of one line of text at 8 and 10 pt
TICK = 0.1                   # a tick and its pad


def data_uri(png):
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata=PNG_METADATA)
    return buf.getvalue()


def as_matrix(data):
    """A 2-D float array from a view's data: 1-D becomes one row, more than 2-D
    is folded into rows (all leading axes) x the last axis; None/inf -> nan."""
    a = np.array(data, dtype=object)
    a = np.where(a == None, np.nan, a).astype(float)  # noqa: E711  (elementwise None test)
    a[~np.isfinite(a)] = np.nan
    if a.ndim == 0:
        a = a.reshape(1, 1)
    elif a.ndim == 1:
        a = a.reshape(1, -1)
    elif a.ndim > 2:
        a = a.reshape(-1, a.shape[-1])
    return a


def _norm(values):
    """Linear colour scale, or logarithmic when non-negative values span more
    than three decades (typical of |analytical - numerical| maps)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return Normalize(0, 1), False
    lo, hi = float(finite.min()), float(finite.max())
    positive = finite[finite > 0]
    if lo >= 0 and positive.size and hi / positive.min() > 1e3:
        vmin = max(float(positive.min()), hi * 1e-12)
        return LogNorm(vmin=vmin, vmax=hi), True
    if lo == hi:   # a constant map (often all zeros: no error anywhere): zero at the dark end
        lo, hi = min(lo, 0.0), max(hi, 0.0) or 1.0
    return Normalize(lo, hi), False


def heatmap_png(view):
    return _png(heatmap_figure(view))


def heatmap_figure(view):
    m = as_matrix(view.get("data", []))
    rows, cols = m.shape
    mask = np.zeros(m.shape, bool)
    leaks = False
    if view.get("mask_upper"):
        # the future greyed where its weight is exactly 0: a weight on the future is the leak the figure shows
        future = np.triu(np.ones(m.shape, bool), k=1)
        mask = future & (m == 0)
        leaks = bool((future & ~mask).any())
    tolerance = view.get("tolerance")
    raw = m
    if tolerance:
        # exact zeros too are "under" the log scale (drawn as equal), never masked as missing
        m = np.maximum(np.abs(m) / float(tolerance), 1e-6)
    shown = np.ma.masked_array(m, mask | np.isnan(m))
    if tolerance:
        norm, log = _tolerance_norm(np.where(mask, np.nan, m)), False
        cmap = _cmap("Reds").with_extremes(under=WITHIN)
    else:
        norm, log = _norm(np.where(mask, np.nan, m))
        cmap = _cmap("viridis")
    if log:
        shown = np.ma.masked_array(np.maximum(m, norm.vmin), shown.mask)

    width, height = _size(rows, cols)
    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    image = ax.imshow(shown, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, extend="min" if tolerance else "neither")
    xticks, yticks = view.get("xticklabels"), view.get("yticklabels")
    right, above = _tick_room(bar.ax.yaxis)
    notes = []
    if tolerance:
        bar.set_label("|difference| / tolerance", fontsize=8)
        notes.append("pale green: within the tolerance (equal)")
    if view.get("mask_upper"):
        notes.append("grey: masked future positions (j > i)")
        if leaks:
            notes.append("in colour above the diagonal: weight on the future")
    # the notes, one line each when they would not fit the figure's width on one
    title = "; ".join(notes) if len("; ".join(notes)) < 12 * width else "\n".join(notes)
    _fit(fig, left=_label_room(view.get("ylabel")) + _across(yticks, rows),
         bottom=_label_room(view.get("xlabel")) + _down(xticks, cols),
         right=right + (LINE[8] if tolerance else 0.0),     # and the bar's label
         top=max(above, (0.3 + 0.15 * title.count("\n")) if notes else 0.12))
    if notes:
        ax.set_title(title, fontsize=8, color="#555555")
    ax.set_xlabel(view.get("xlabel", ""))
    ax.set_ylabel(view.get("ylabel", ""))
    _integer_ticks(ax, rows, cols)
    _tick_labels(ax, xticks, yticks)
    if annotates(rows, cols, width):
        for (i, j), value in np.ndenumerate(m):
            if mask[i, j] or not np.isfinite(value) or (tolerance and value <= 1):
                continue     # within the tolerance: equal, no number to read
            colour = "white" if (norm(value) > 0.6 if tolerance else norm(value) < 0.5) else "black"
            ax.text(j, i, _short(raw[i, j]), ha="center", va="center", fontsize=7, color=colour)
    return fig


def annotates(rows, cols, width=None):
    """Whether a rows x cols heatmap prints its values: few cells, each wide enough
    for a number (the axes span about width - 1.8 inches), so numbers never overlap."""
    if width is None:
        width = _size(rows, cols)[0]
    return rows * cols <= ANNOTATE_MAX_CELLS and (width - 1.8) / cols >= ANNOTATE_MIN_CELL


def _size(rows, cols):
    cell = 0.42 if max(rows, cols) <= 16 else max(0.05, 7.0 / max(rows, cols))
    width = min(9.0, max(3.6, cols * cell + 1.8))
    height = min(7.0, max(2.4 if rows > 2 else 1.9, rows * cell + 1.2))
    return width, height


def _fit(fig, left, bottom, right, top):
    """Place the axes with these margins (inches), as far as the figure allows."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(left=min(left / width, 0.45), right=max(1 - right / width, 0.55),
                        bottom=min(bottom / height, 0.45), top=max(1 - top / height, 0.55))


def _tick_room(axis):
    """Room a y axis's tick labels (10 pt) need: (beside it, above it). Beside: 0.5, -50000, or 10^1 in
    mathtext; above: a scale or offset such as 1e-5 that the labels are read with, when there is one."""
    formatter = axis.get_major_formatter()
    labels = formatter.format_ticks(axis.get_major_locator()())
    shown = [re.sub(r"\\mathdefault|[$^{}]", "", text) for text in labels]
    beside = 2 * TICK + CHAR[10] * max((len(text) for text in shown), default=3)
    return beside, (LINE[10] + 0.15 if formatter.get_offset() else 0.0)


def _label_room(label):
    """An axis label's line and its pad, when there is a label."""
    return LINE[10] + 0.08 if label else 0.05


def _across(labels, n):
    """Room for the tick labels left of the y axis: the given labels (8 pt) or the numbers 0..n-1 (10 pt)."""
    if labels:
        return TICK + CHAR[8] * max(len(str(t)) for t in labels)
    return TICK + CHAR[10] * len(str(max(n - 1, 0)))


def _down(labels, n):
    """Room for the tick labels under the x axis: one line, or the longest label turned 90 degrees."""
    if labels and len(labels) > 12:
        return TICK + CHAR[8] * max(len(str(t)) for t in labels)
    return TICK + (LINE[8] if labels else LINE[10])


def _tolerance_norm(ratios):
    """|difference| / tolerance: below 1 is 'under' (drawn as equal), then a log
    scale up to the largest ratio (at least 10, so a single value still has a scale)."""
    finite = ratios[np.isfinite(ratios)]
    top = max(10.0, float(finite.max()) if finite.size else 10.0)
    return LogNorm(vmin=1.0, vmax=top, clip=False)


def _tick_labels(ax, xticklabels, yticklabels):
    """Tokens on the axes of an attention map: one label per cell, when given."""
    if xticklabels:
        ax.set_xticks(range(len(xticklabels)))
        ax.set_xticklabels([str(t) for t in xticklabels], fontsize=8, rotation=90 if len(xticklabels) > 12 else 0)
    if yticklabels:
        ax.set_yticks(range(len(yticklabels)))
        ax.set_yticklabels([str(t) for t in yticklabels], fontsize=8)


LEGEND_INSIDE = 4      # series a curve's legend may cover on the axes; more go beside them


def curve_png(view):
    return _png(curve_figure(view))


def curve_figure(view):
    series = view.get("series", {}) or {}
    fig = Figure(figsize=(6.4, 3.0), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    every = []
    for i, (label, ys) in enumerate(series.items()):
        y = as_matrix(ys).ravel()
        every.append(y)
        # (the colour cycle has 10 colours: the 11th series on would share one, so each ten gets its own dashes)
        ax.plot(np.arange(len(y)), y, label=str(label), marker="o" if len(y) <= 30 else None, markersize=3,
                linestyle=("-", "--", ":", "-.")[i // 10 % 4])
    values = np.concatenate(every) if every else np.array([])
    finite = values[np.isfinite(values)]
    if finite.size and finite.min() > 0 and finite.max() / finite.min() > 100:
        ax.set_yscale("log")
    ax.set_xlabel(view.get("xlabel", "step"))
    ax.set_ylabel(view.get("ylabel", ""))
    ax.grid(True, alpha=0.3)
    if len(series) > LEGEND_INSIDE:      # many series (a model's layers): the legend beside the axes, not on them
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    elif len(series) > 1 or (series and str(next(iter(series)))):
        ax.legend(fontsize=8)
    left, above = _tick_room(ax.yaxis)
    beside = len(series) > LEGEND_INSIDE
    if beside:
        fig.set_size_inches(8.4, 3.0)
    _fit(fig, left=_label_room(view.get("ylabel")) + left,
         bottom=_label_room(view.get("xlabel", "step")) + TICK + LINE[10], right=2.0 if beside else 0.3,
         top=max(above, 0.12))
    return fig


def _cmap(name):
    from matplotlib import colormaps
    return colormaps[name].with_extremes(bad=MASKED)


def _integer_ticks(ax, rows, cols):
    for axis, n in ((ax.xaxis, cols), (ax.yaxis, rows)):
        step = max(1, math.ceil(n / 16))
        axis.set_ticks(range(0, n, step))


def _short(value):
    if value == 0:
        return "0"
    if abs(value) >= 1e3 or abs(value) < 1e-2:
        return f"{value:.0e}"
    return f"{value:.2f}"
