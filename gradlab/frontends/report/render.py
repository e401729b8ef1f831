"""From result records to one self-contained HTML page.

Checks describe what they saw as "views" (gradlab.contract.records.table / heatmap /
curve / text) in `details["views"]`; this module renders each by its type, so
a new check needs no report code. Anything else a check leaves in `details`
is shown too: a list of rows as a table, other values as text. The page has
its CSS inline and its figures as data URIs: no network, no JavaScript.
"""
import json
import math
from collections import OrderedDict

from jinja2 import Environment, PackageLoader, StrictUndefined

from gradlab.contract.records import ERROR, FAIL, PASS, SKIP, CheckRecord, KindResult
from gradlab.frontends.report import figures
from gradlab.frontends.report.labels import PERCENT, label

MAX_TABLE_ROWS = 60
VERDICT_CHARS = 240     # a failing check's line in the verdict: about two lines of the page
STATUS_WORD = {PASS: "pass", FAIL: "fail", ERROR: "error", SKIP: "skip"}


def environment():
    # Autoescaping is on for every template: messages, module names and
    # parameter names come from student code and must never become markup.
    return Environment(loader=PackageLoader("gradlab.frontends.report", "templates"), autoescape=True,
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def as_kind_results(results):
    """A RunResult, a KindResult, dicts of either, or a list of those -> [KindResult]."""
    if isinstance(results, (KindResult, dict)) or hasattr(results, "results"):
        results = [results]
    out = []
    for r in results:
        if hasattr(r, "results"):
            out.extend(r.results)
        elif isinstance(r, dict) and "results" in r:
            out.extend(KindResult.from_dict(k) for k in r["results"])
        elif isinstance(r, dict):
            out.append(KindResult.from_dict(r))
        else:
            out.append(r)
    return out


def render(results, *, replay=None, title=None, version=None, student=None, notes=()):
    """The report page as a string. `student`: a name (for grading) shown in the
    title and on every check's card; `notes`: what grading noted on the submission (notebook
    lines skipped, a kind registered twice, a helper file that did not import), listed on the page."""
    kind_results = as_kind_results(results)
    kinds = [_kind_context(i, r, student) for i, r in enumerate(kind_results)]
    every = [c for k in kinds for c in k["checks"]]
    counts = OrderedDict((s, sum(c["status"] == s for c in every)) for s in (FAIL, ERROR, PASS, SKIP))
    failed = _said_once([c for c in every if c["status"] in (FAIL, ERROR)])
    impls = list(OrderedDict.fromkeys(k["impl"] for k in kinds))
    seeds = list(OrderedDict.fromkeys(k["seed"] for k in kinds))
    if version is None:
        from gradlab import __version__ as version
    context = {
        "title": title or (f"gradlab report for {student}" if student else
                           f"gradlab report: {', '.join(impls) or 'no results'}"),
        "student": student,
        # the implementations under the title, unless the title already names them
        "sub": ((f"{student}: " if student else "") + ", ".join(impls)) if (student or title) else "",
        "impls": impls, "seeds": seeds, "replay": replay, "version": version,
        "kinds": kinds, "failed": failed, "counts": counts, "total": len(every),
        # a kind whose every applicable check was skipped has not passed (KindResult.passed), nor has the page
        "passed": not failed and not any(r.nothing_judged for r in kind_results), "multi_impl": len(impls) > 1,
        "notes": list(notes),
    }
    return environment().get_template("report.html.j2").render(**context)


def _kind_context(index, result, student=None):
    anchor = f"k{index}-{_slug(result.kind)}"
    checks = []
    for record in result.checks:
        if isinstance(record, dict):
            record = CheckRecord.from_dict(record)
        views = _views(record.details or {})
        checks.append({
            "name": record.name, "status": record.status, "message": record.message,
            "kind": result.kind, "impl": result.impl, "student": student,
            # (a file the pytest plugin could not load is the pseudo-kind "(load)": its item is FILE::load)
            "anchor": f"{anchor}-{_slug(record.name)}",
            "label": record.name if result.kind.startswith("(") else f"{result.kind}::{record.name}",
            "key": _key_number(record.name, record.metrics),
            "metrics": _metrics(record.name, record.metrics),
            "views": views,
            # figures stay visible when a passing check's text is collapsed
            "figures": [v for v in views if v["type"] == "image"],
            "texts": [v for v in views if v["type"] != "image"],
            "seconds": record.seconds,
            # the first line, without the "kind: " the card's name already says
            "headline": _headline(result.kind, record.message),
            "verdict": shortened(_headline(result.kind, record.message)),
        })
    statuses = {c["status"] for c in checks}
    return {"kind": result.kind, "impl": result.impl, "seed": result.seed, "anchor": anchor,
            "config": [(k, _fmt(v)) for k, v in (result.config or {}).items() if k != "extra" or v],
            "checks": checks, "passed": not statuses & {FAIL, ERROR},
            "counts": {s: sum(c["status"] == s for c in checks) for s in (PASS, FAIL, ERROR, SKIP)}}


def _said_once(failed):
    """The failing checks as the verdict and "What failed" list them: consecutive checks of one kind that
    erred with the same message are one entry (a kind not graded because a file does not import has every
    check say so: the reason is shown once, not once per check). An entry keeps every check's anchor."""
    out = []
    for c in failed:
        last = out[-1] if out else None
        if (last and c["status"] == last["status"] == ERROR and c["message"] == last["message"]
                and (c["kind"], c["impl"]) == (last["kind"], last["impl"])):
            last["names"].append(c["name"])
            last["anchors"].append(c["anchor"])
            last["label"] = f"{c['kind']}: {len(last['names'])} checks ({', '.join(last['names'])})"
        else:
            out.append({**c, "names": [c["name"]], "anchors": [c["anchor"]]})
    return out


def _headline(kind, message):
    first = (message or "").splitlines()[0] if message else ""
    return first[len(kind) + 2:] if first.startswith(f"{kind}: ") else first


def shortened(line, limit=VERDICT_CHARS):
    """`line` cut to at most `limit` characters where a reader can stop: after a sentence or a clause
    ("; "), else after a comma or a colon, else between words, never inside parentheses when that can be
    helped (a cut inside "numerical -0.854301 (error ..." left half a number and an open parenthesis)."""
    if len(line) <= limit:
        return line
    cuts = {". ": [], "; ": [], ", ": [], ": ": [], " ": []}
    depth = 0
    for i, ch in enumerate(line[:limit + 1]):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        pair = line[i:i + 2] if ch != " " else " "
        if pair in cuts and i <= limit - 2 and (depth == 0 or pair == " "):
            cuts[pair].append(i + (1 if pair == ". " else 0))
    for group in ((". ", "; "), (", ", ": "), (" ",)):
        at = max((i for pair in group for i in cuts[pair]), default=None)
        if at:
            return line[:at].rstrip(" ,;:") + " \u2026"
    return line[:limit - 2] + " \u2026"


def _metrics(check, metrics):
    """(plain label, formatted value) of each metric a reader needs; bookkeeping hidden."""
    out = []
    for key, value in (metrics or {}).items():
        words = label(check, key)
        if words is not None:
            percent = key in PERCENT and isinstance(value, float) and math.isfinite(value)
            out.append((words, f"{value:.1%}" if percent else _fmt(value)))
    return out


def _key_number(check, metrics):
    """The number shown beside a check in the summary: the first shown numeric
    metric (checks list their key number first), under its plain label."""
    for key, value in (metrics or {}).items():
        words = label(check, key)
        if words is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
            return f"{words} {_fmt(value)}"
    return ""


# ---- views ---------------------------------------------------------------------

def _views(details):
    out = []
    for view in details.get("views", []) or []:
        out.append(_view(view))
    for key, value in details.items():   # anything else a check left: show it, never drop it
        if key == "views":
            continue
        if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
            out.append(_view({"type": "table", "title": key, "rows": value}))
        elif isinstance(value, dict) and value and all(not isinstance(v, (dict, list)) for v in value.values()):
            out.append(_view({"type": "table", "title": key, "rows": [{"name": k, "value": v} for k, v in value.items()]}))
        else:
            out.append(_view({"type": "text", "title": key, "body": _json(value)}))
    return out


def _view(view):
    kind = view.get("type") if isinstance(view, dict) else None
    title = str(view.get("title", "")) if isinstance(view, dict) else ""
    try:
        if kind == "table":
            return _table(title, view.get("rows") or [])
        if kind == "heatmap":
            return {"type": "image", "title": title, "src": figures.data_uri(figures.heatmap_png(view)),
                    "alt": f"heatmap: {title}"}
        if kind == "curve":
            return {"type": "image", "title": title, "src": figures.data_uri(figures.curve_png(view)),
                    "alt": f"curve: {title}"}
        if kind == "text":
            return {"type": "text", "title": title, "body": str(view.get("body", ""))}
    except Exception as e:  # a malformed view must not cost the whole report
        return {"type": "text", "title": title, "body": f"(this {kind} view could not be drawn: "
                                                        f"{type(e).__name__}: {e})\n{_json(view)}"}
    return {"type": "text", "title": title or f"{kind} view", "body": _json(view)}


def _table(title, rows):
    columns = list(OrderedDict.fromkeys(k for r in rows if isinstance(r, dict) for k in r))
    body = []
    for r in rows[:MAX_TABLE_ROWS]:
        r = r if isinstance(r, dict) else {"value": r}
        body.append([_cell(r.get(c)) for c in columns])
    more = len(rows) - MAX_TABLE_ROWS if len(rows) > MAX_TABLE_ROWS else 0
    return {"type": "table", "title": title, "columns": columns, "rows": body, "more": more}


def _cell(value):
    """(text, css class) of a table cell: booleans as marks, numbers right-aligned."""
    if isinstance(value, bool):
        return ("\u2713", "yes") if value else ("\u2717", "no")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _fmt(value), "num"
    return _fmt(value), ""


def _fmt(value):
    if value is None:
        return "\u2014"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if value == 0:
            return "0"
        if abs(value) >= 1e5 or abs(value) < 1e-3:
            return f"{value:.3e}"
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        items = [_fmt(v) for v in value[:12]]
        return "(" + ", ".join(items) + (", \u2026" if len(value) > 12 else "") + ")"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items())
    return str(value)


def _json(value):
    try:
        return json.dumps(value, indent=1, default=str)[:4000]
    except (TypeError, ValueError):
        return repr(value)[:4000]


def _slug(text):
    return "".join(ch if ch.isalnum() else "-" for ch in str(text)).strip("-").lower() or "x"
