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
ANNOTATE_MAX_CELLS = 64  # print values in the cells of matrices up to 8 x 8


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
    shown = np.ma.masked_array(m, mask | np.isnan(m))
    norm, log = _norm(np.where(mask, np.nan, m))
    if log:
        shown = np.ma.masked_array(np.maximum(m, norm.vmin), shown.mask)

    cell = 0.42 if max(rows, cols) <= 16 else max(0.05, 7.0 / max(rows, cols))
    width = min(9.0, max(3.6, cols * cell + 1.8))
    height = min(7.0, max(2.4, rows * cell + 1.2))
    fig = Figure(figsize=(width, height), dpi=DPI)
    ax = fig.add_subplot()
    cmap = _cmap("viridis")
    image = ax.imshow(shown, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    if view.get("mask_upper"):
        ax.set_title("grey: masked future positions (j > i)", fontsize=8, color="#555555")
    ax.set_xlabel(view.get("xlabel", ""))
    ax.set_ylabel(view.get("ylabel", ""))
    _integer_ticks(ax, rows, cols)
    if rows * cols <= ANNOTATE_MAX_CELLS:
        for (i, j), value in np.ndenumerate(m):
            if not mask[i, j] and np.isfinite(value):
                colour = "white" if norm(value) < 0.5 else "black"
                ax.text(j, i, _short(value), ha="center", va="center", fontsize=7, color=colour)
    fig.tight_layout()
    return _png(fig)


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
