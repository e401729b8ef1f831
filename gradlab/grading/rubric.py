"""The rubric: how many points each (kind, check) is worth and who sees it.

    # rubric.toml
    visibility = "after_due_date"        # every test's default (Gradescope's values)

    [attention]
    points = 10                          # shared equally by the checks not given below
    [attention.checks]
    gradient = 4
    causality = { points = 2, visibility = "visible" }
    finite = 0                           # 0 points: not run, not shown

    [lm.checks.overfit]
    points = 3
    partial = true                       # credit in proportion to how far the loss got

Without a rubric (or for a kind the rubric leaves out) every applicable check
of the kind is worth 1 point and visible. A rubric that does not make sense
is a UsageError of one line that names the key.
"""
import difflib
import hashlib
import json
import math
import os
import sys
from dataclasses import asdict, dataclass, field

from gradlab.contract import suite
from gradlab.contract.errors import UsageError
from gradlab.contract.kinds import KINDS, get_kind

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")   # Gradescope's values
DEFAULT_VISIBILITY = "visible"


def _degree_overfit(metrics):
    """The overfit check's degree: how far the student's lowest loss got from the
    reference's starting loss towards the bar it had to reach (1 = passed)."""
    try:
        start = metrics["reference_final_loss"] + metrics["reference_drop"]
        need = start - metrics["limit"]
        got = start - metrics["lowest_loss"]
    except (KeyError, TypeError):
        return 0.0
    if not (need > 0 and math.isfinite(got)):
        return 0.0
    return min(1.0, max(0.0, got / need))


# Checks that measure a degree, not just pass/fail: fraction of credit from the record's metrics.
DEGREES = {"overfit": _degree_overfit}


@dataclass(frozen=True)
class Rule:
    points: float
    visibility: str = DEFAULT_VISIBILITY
    partial: bool = False


@dataclass
class Rubric:
    kinds: dict = field(default_factory=dict)    # kind -> {check name: Rule}, checks in run order
    source: str = "default"                       # the file it came from, for messages
    visibility: str = DEFAULT_VISIBILITY          # the top-level default (results.json's own visibility)

    def checks(self, kind):
        """The check names to run for `kind`, in run order."""
        return list(self.kinds[kind])

    def max_score(self):
        """The rubric's points, rounded as the scores are (fractional points sum with float rounding)."""
        return round(sum(rule.points for rules in self.kinds.values() for rule in rules.values()), 4)

    def to_dict(self):
        return {kind: {name: asdict(rule) for name, rule in rules.items()} for kind, rules in self.kinds.items()}

    def digest(self):
        return hashlib.sha256(json.dumps([self.to_dict(), self.visibility], sort_keys=True).encode()).hexdigest()[:16]


def parse_kinds(text):
    """'attention, ffn' -> ['attention', 'ffn'], each a known kind."""
    names = [k.strip() for k in str(text).split(",") if k.strip()]
    if not names:
        raise UsageError("--kinds: give at least one kind, e.g. --kinds attention,layernorm")
    for name in names:
        get_kind(name)
    return list(dict.fromkeys(names))


def default_rules(kind, visibility=DEFAULT_VISIBILITY):
    return {c.name: Rule(1.0, visibility) for c in suite.applicable(get_kind(kind))}


def load(path=None, kinds=None):
    """The rubric for `kinds` (a list, or None: the kinds the rubric file names).
    Raises UsageError naming the key that is wrong."""
    if path is None:
        if not kinds:
            raise UsageError("--kinds is required when no --rubric names the kinds")
        return Rubric({k: default_rules(k) for k in kinds})
    data = _read_toml(path)
    where = str(path)
    default_vis = _visibility(data.pop("visibility", DEFAULT_VISIBILITY), f"{where}: visibility")
    for key, value in data.items():
        if key not in KINDS:
            close = difflib.get_close_matches(key, list(KINDS) + ["visibility"], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"{where}: unknown key {key!r}{hint}; the top level holds `visibility` and one "
                             f"table per kind: {', '.join(KINDS)}")
        if not isinstance(value, dict):
            raise UsageError(f"{where}: {key} must be a table ([{key}]), not {type(value).__name__}")
    if kinds is None:
        kinds = list(data)
        if not kinds:
            raise UsageError(f"{where}: names no kind; add a [KIND] table or pass --kinds")
    else:
        extra = [k for k in data if k not in kinds]
        if extra:
            raise UsageError(f"{where}: [{extra[0]}] is not among --kinds ({', '.join(kinds)}); "
                             "add it to --kinds or drop it from the rubric")
    rubric = Rubric(source=where, visibility=default_vis)
    for kind in kinds:
        rubric.kinds[kind] = _kind_rules(kind, data.get(kind, {}), default_vis, where)
    total = rubric.max_score()
    if total <= 0:
        raise UsageError(f"{where}: every check is worth 0 points; nothing to grade")
    if not math.isfinite(total) or total > MAX_POINTS:
        # (1e308 in two kinds: an infinite total, and every score became NaN as it was written)
        raise UsageError(f"{where}: the points add up to {total:g}, more than {MAX_POINTS:g}; give smaller points "
                         "(a score is a share of the total, so only their ratios matter)")
    return rubric


def _read_toml(path):
    if sys.version_info >= (3, 11):
        import tomllib
    else:   # pragma: no cover - Python 3.10
        import tomli as tomllib
    if os.path.exists(path) and not os.path.isdir(path) and not os.path.isfile(path):
        raise UsageError(f"--rubric {path}: not a regular file (a device or a pipe); give the rubric's .toml file")
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise UsageError(f"--rubric {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"--rubric {path}: is a folder; give the rubric's .toml file") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}); save it as UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None
    except OSError as e:
        raise UsageError(f"--rubric {path}: cannot be read ({e.strerror})") from None


def _kind_rules(kind, table, default_vis, where):
    at = f"{where}: {kind}"
    known = {"points", "visibility", "checks"}
    for key in table:
        if key not in known:
            raise UsageError(f"{at}.{key}: unknown key; a kind's table holds {', '.join(sorted(known))}")
    vis = _visibility(table.get("visibility", default_vis), f"{at}.visibility")
    total = table.get("points")
    if total is not None:
        total = _points(total, f"{at}.points")
    checks = table.get("checks", {})
    if not isinstance(checks, dict):
        raise UsageError(f"{at}.checks must be a table of check = points, not {type(checks).__name__}")
    applicable = [c.name for c in suite.applicable(get_kind(kind))]
    given = {}
    for name, value in checks.items():
        if name not in applicable:
            close = difflib.get_close_matches(name, applicable, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"{at}.checks.{name}: not a check of {kind}{hint}; its checks are "
                             f"{', '.join(applicable)}")
        given[name] = _rule(value, vis, f"{at}.checks.{name}")
    rest = [n for n in applicable if n not in given]
    explicit = sum(r.points for r in given.values())
    if total is None:
        each = 1.0
    elif explicit > total + 1e-9:
        raise UsageError(f"{at}.points is {total:g} but its checks already add up to {explicit:g}")
    elif not rest:
        if abs(explicit - total) > 1e-9:
            raise UsageError(f"{at}.points is {total:g} but its checks add up to {explicit:g}")
        each = 0.0
    else:
        each = (total - explicit) / len(rest)
    rules = {}
    for name in applicable:   # run order
        rule = given.get(name, Rule(each, vis))
        if rule.points > 0:
            rules[name] = rule
    if not rules:
        raise UsageError(f"{at}: every check is worth 0 points; drop [{kind}] or give it points")
    return rules


def _rule(value, vis, at):
    if isinstance(value, dict):
        for key in value:
            if key not in ("points", "visibility", "partial"):
                raise UsageError(f"{at}.{key}: unknown key; a check holds points, visibility, partial")
        if "points" not in value:
            raise UsageError(f"{at}: give its points (points = 2)")
        partial = value.get("partial", False)
        if not isinstance(partial, bool):
            raise UsageError(f"{at}.partial must be true or false")
        name = at.rsplit(".", 1)[-1]
        if partial and name not in DEGREES:
            raise UsageError(f"{at}.partial: {name} is pass or fail; partial credit is for checks that measure "
                             f"a degree ({', '.join(DEGREES)})")
        return Rule(_points(value["points"], f"{at}.points"), _visibility(value.get("visibility", vis),
                                                                          f"{at}.visibility"), partial)
    return Rule(_points(value, at), vis)


MAX_POINTS = 1e9      # a rubric's total: scores stay exact to 4 decimals well below it


def _points(value, at):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise UsageError(f"{at}: points must be a number >= 0, not {value!r}")
    return float(value)


def _visibility(value, at):
    if value not in VISIBILITIES:
        raise UsageError(f"{at}: {value!r} is not a Gradescope visibility; use one of {', '.join(VISIBILITIES)}")
    return value


def partial_words(rule, record, score):
    """For a failed check with partial credit: how its points were worked out (the numbers are in no
    message otherwise); "" for the others."""
    if not (rule.partial and record["status"] == "fail" and record["name"] == "overfit"):
        return ""
    m = record.get("metrics") or {}
    try:
        start = m["reference_final_loss"] + m["reference_drop"]
        return (f"\npartial credit: {score:g} of {rule.points:g} points: your lowest loss was {m['lowest_loss']:.4g}, "
                f"{_degree_overfit(m):.0%} of the way from the starting loss {start:.4g} to the bar {m['limit']:.4g}")
    except (KeyError, TypeError, ValueError):
        return f"\npartial credit: {score:g} of {rule.points:g} points"


def credit(rule, record):
    """Points a CheckRecord (a dict) earns under `rule`."""
    if record["status"] == "pass":
        return rule.points
    if rule.partial and record["status"] == "fail":
        degree = DEGREES[record["name"]](record.get("metrics") or {})
        return round(rule.points * degree, 4)
    return 0.0
