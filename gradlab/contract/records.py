"""Result records: one type feeds every front end (CLI lines, --json, the
pytest plugin, the HTML report)."""
import json
import math
from dataclasses import dataclass, field

PASS, FAIL, ERROR, SKIP = "pass", "fail", "error", "skip"
PRECONDITION = "smoke"      # the check every other check of a kind runs after (execution/plan.py)


# ---- views: what a check shows beside its message ---------------------------
# A record's `details["views"]` is a list of these JSON-able dicts; the HTML
# report renders each by its "type", so a new check needs no report code.

def table(title, rows):
    """rows: list of dicts with the same keys (one column per key)."""
    return {"type": "table", "title": title, "rows": rows}


def heatmap(title, matrix, xlabel="", ylabel="", mask_upper=False, tolerance=None, xticklabels=None,
            yticklabels=None):
    """matrix: 2-D list of numbers (e.g. |analytical - numerical|, attention weights).
    tolerance: the matrix holds differences; the report draws |difference| / tolerance
    and paints every cell within the tolerance as equal (rounding is not an error).
    xticklabels / yticklabels: one label per column / row (e.g. the tokens of an attention map)."""
    view = {"type": "heatmap", "title": title, "data": matrix, "xlabel": xlabel, "ylabel": ylabel,
            "mask_upper": mask_upper}
    if tolerance is not None:
        view["tolerance"] = float(tolerance)
    if xticklabels is not None:
        view["xticklabels"] = [str(t) for t in xticklabels]
    if yticklabels is not None:
        view["yticklabels"] = [str(t) for t in yticklabels]
    return view


def curve(title, series, xlabel="step", ylabel=""):
    """series: {label: [y0, y1, ...]} drawn on one set of axes."""
    return {"type": "curve", "title": title, "series": series, "xlabel": xlabel, "ylabel": ylabel}


def text(title, body):
    return {"type": "text", "title": title, "body": body}


def json_default(value):
    """json.dump's default= for records: NumPy arrays and scalars as lists and numbers,
    sets and tuples as lists, anything else as its text."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


# ---- JSON files -------------------------------------------------------------
# Every JSON file gradlab writes for a reader (--json, grade's files, results.json) goes through dumps():
# strict JSON, which JavaScript's JSON.parse and other strict parsers read. Python's json writes a NaN or an
# inf (a student's optimizer can leave them in a parameter, and so in an error metric) as the bare tokens
# NaN / Infinity, which are not JSON; gradlab writes them as these strings instead.
NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def finite_json(value):
    """`value` with every non-finite float (NumPy's included) as its NON_FINITE string, NumPy arrays and
    scalars as lists and numbers, tuples and sets as lists; anything else is left to json_default."""
    if isinstance(value, float):
        return value if math.isfinite(value) else NON_FINITE[repr(float(value))]
    if value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [finite_json(v) for v in value]
    if hasattr(value, "tolist") or hasattr(value, "item"):
        return finite_json(json_default(value))
    return value


def dumps(value, **options):
    """The text of a JSON file gradlab writes: strict JSON (allow_nan=False), non-finite numbers as strings."""
    return json.dumps(finite_json(value), allow_nan=False, default=json_default, **options)


@dataclass
class CheckRecord:
    name: str
    status: str                     # pass | fail | error | skip
    message: str
    metrics: dict = field(default_factory=dict)   # key numbers (JSON scalars)
    details: dict = field(default_factory=dict)   # tables/matrices for the report (JSON-able)
    seconds: float = 0.0

    @property
    def ok(self):
        return self.status in (PASS, SKIP)

    def to_dict(self):
        return {"name": self.name, "status": self.status, "message": self.message,
                "metrics": self.metrics, "details": self.details, "seconds": round(self.seconds, 4)}

    @classmethod
    def from_dict(cls, d):
        return cls(d["name"], d["status"], d["message"], d.get("metrics", {}), d.get("details", {}),
                   d.get("seconds", 0.0))


@dataclass
class KindResult:
    kind: str
    impl: str
    seed: int
    config: dict
    checks: list = field(default_factory=list)    # [CheckRecord]

    @property
    def passed(self):
        """No check failed or erred, and something was judged: a run whose every check but the precondition
        was skipped (float16 for an optimizer, --checks that do not apply) has passed nothing."""
        return all(c.ok for c in self.checks) and not self.nothing_judged

    @property
    def nothing_judged(self):
        """Every check that applies, beside the precondition (smoke), was skipped (there was at least one), or
        every check was, and none failed or erred: a precondition that failed has judged (the module fails), and
        its failure, not "nothing was judged", is what to say. A check asked for that does not apply to the kind
        is not counted."""
        applying = [c for c in self.checks if c.metrics.get("applies", True)]
        beside = [c for c in applying if c.name != PRECONDITION]
        judged = beside if beside else applying
        return bool(judged) and all(c.status == SKIP for c in judged) and all(c.ok for c in self.checks)

    def counts(self):
        out = {PASS: 0, FAIL: 0, ERROR: 0, SKIP: 0}
        for c in self.checks:
            out[c.status] += 1
        return out

    def __getitem__(self, name):
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self):
        return {"kind": self.kind, "impl": self.impl, "passed": self.passed, "seed": self.seed,
                "config": self.config, "checks": [c.to_dict() for c in self.checks]}

    @classmethod
    def from_dict(cls, d):
        return cls(d["kind"], d["impl"], d["seed"], d.get("config", {}),
                   [CheckRecord.from_dict(c) for c in d["checks"]])

    def _repr_html_(self):
        """Shown inline by Jupyter: the HTML report of this result (gradlab.frontends.report.notebook)."""
        from gradlab.frontends.report.notebook import repr_html
        return repr_html(self)


@dataclass
class RunResult:
    """`check all`: one KindResult per kind."""
    results: list = field(default_factory=list)

    @property
    def passed(self):
        return all(r.passed for r in self.results)

    @property
    def checks(self):
        return [c for r in self.results for c in r.checks]

    def to_dict(self):
        return {"results": [r.to_dict() for r in self.results], "passed": self.passed}

    def _repr_html_(self):
        """Shown inline by Jupyter: the HTML report of this result (gradlab.frontends.report.notebook)."""
        from gradlab.frontends.report.notebook import repr_html
        return repr_html(self)
