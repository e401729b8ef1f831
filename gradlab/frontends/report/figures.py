"""Figures for the HTML report: heatmaps and curves drawn with matplotlib's
object API (Figure + FigureCanvasAgg, never pyplot, so no global state and no
GUI backend), returned as PNG bytes with fixed metadata: the same view gives
the same bytes, run after run."""
import base64
import io
import math

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


def data_uri(png):
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _png(fig):
    FigureCanvasAgg(fig)
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
    m = as_matrix(view.get("data", []))
    rows, cols = m.shape
    mask = np.zeros(m.shape, bool)
    if view.get("mask_upper"):
        mask = np.triu(np.ones(m.shape, bool), k=1)
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
    ax = fig.add_subplot()
    image = ax.imshow(shown, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, extend="min" if tolerance else "neither")
    notes = []
    if tolerance:
        bar.set_label("|difference| / tolerance", fontsize=8)
        notes.append("pale green: within the tolerance (equal)")
    if view.get("mask_upper"):
        notes.append("grey: masked future positions (j > i)")
    if notes:
        ax.set_title("; ".join(notes), fontsize=8, color="#555555")
    ax.set_xlabel(view.get("xlabel", ""))
    ax.set_ylabel(view.get("ylabel", ""))
    _integer_ticks(ax, rows, cols)
    _tick_labels(ax, view.get("xticklabels"), view.get("yticklabels"))
    if annotates(rows, cols, width):
        for (i, j), value in np.ndenumerate(m):
            if mask[i, j] or not np.isfinite(value) or (tolerance and value <= 1):
                continue     # within the tolerance: equal, no number to read
            colour = "white" if (norm(value) > 0.6 if tolerance else norm(value) < 0.5) else "black"
            ax.text(j, i, _short(raw[i, j]), ha="center", va="center", fontsize=7, color=colour)
    fig.tight_layout()
    return _png(fig)


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


def curve_png(view):
    series = view.get("series", {}) or {}
    fig = Figure(figsize=(6.4, 3.0), dpi=DPI)
    ax = fig.add_subplot()
    every = []
    for label, ys in series.items():
        y = as_matrix(ys).ravel()
        every.append(y)
        ax.plot(np.arange(len(y)), y, label=str(label), marker="o" if len(y) <= 30 else None, markersize=3)
    values = np.concatenate(every) if every else np.array([])
    finite = values[np.isfinite(values)]
    if finite.size and finite.min() > 0 and finite.max() / finite.min() > 100:
        ax.set_yscale("log")
    ax.set_xlabel(view.get("xlabel", "step"))
    ax.set_ylabel(view.get("ylabel", ""))
    ax.grid(True, alpha=0.3)
    if len(series) > 1 or (series and str(next(iter(series)))):
        ax.legend(fontsize=8)
    fig.tight_layout()
    return _png(fig)


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
