"""`gradlab check KIND --explore N`: run the checks on N configurations drawn
by Hypothesis (gradlab.strategies.configs) and, when one fails, let Hypothesis
shrink it to the smallest configuration that still shows the same failure.

Replayable: Hypothesis draws from a Random seeded with the run's seed, without
its example database, so the same --seed draws the same configurations, and the
failure is printed as a ready-to-paste `gradlab check ... --set ... --seed` line.
"""
import importlib.util
import random
import shlex
from dataclasses import dataclass, field

from gradlab.contract.errors import UsageError


@dataclass
class Exploration:
    kind: str
    seed: int
    tried: int = 0                    # configurations run (drawn and shrunk)
    config: dict = None               # the smallest failing configuration, or None
    result: object = None             # its KindResult
    failing: tuple = ()               # the check names that failed at the first failure found
    first: dict = None                # the first failing configuration, before shrinking
    replay: str = ""
    drawn: list = field(default_factory=list)

    @property
    def passed(self):
        return self.config is None


def explore(kind, n, *, impl=None, checks=None, seed=0, fixed=None, loaded=None):
    """Run the checks on up to `n` drawn configurations of `kind`; returns an
    Exploration (with the smallest failing configuration if one failed).
    `loaded`: the implementation already loaded, so a file is imported once."""
    if importlib.util.find_spec("hypothesis") is None:   # pragma: no cover - hypothesis is a dependency
        raise UsageError("--explore needs Hypothesis; pip install hypothesis")
    from gradlab.execution.plan import Plan

    fixed = dict(fixed or {})
    found = Exploration(kind, seed)
    opened = None if loaded else Plan(impl, kinds=[kind], checks=checks, seed=seed, overrides=fixed)
    loaded = loaded or opened.loaded
    try:
        return _search(kind, n, impl, checks, seed, fixed, loaded, found)
    finally:
        if opened is not None:
            opened.close()      # the worker this call started


def _search(kind, n, impl, checks, seed, fixed, loaded, found):
    """explore's search, on an implementation already loaded."""
    from hypothesis import HealthCheck, Phase, Verbosity, find, settings
    from hypothesis.errors import NoSuchExample
    from gradlab import strategies
    from gradlab.execution.plan import Plan, config_for
    from gradlab.execution.runner import run

    results = {}

    def fails(cfg):
        found.tried += 1
        key = tuple(sorted(cfg.items()))
        if key not in results:
            plan = Plan(impl, kinds=[kind], checks=checks, seed=seed, overrides=cfg, loaded=loaded)
            results[key] = run(plan).results[0]
        result = results[key]
        if len(found.drawn) < n:
            found.drawn.append(dict(cfg))
        bad = tuple(c.name for c in result.checks if not c.ok)
        if not bad:
            return False
        if not found.failing:   # the first failure decides what "the same failure" means while shrinking
            found.failing, found.first = bad, dict(cfg)
        return set(found.failing) <= set(bad)

    options = settings(max_examples=n, database=None, deadline=None, verbosity=Verbosity.quiet,
                       phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck))
    try:
        smallest = find(strategies.configs(kind, **fixed), fails, settings=options, random=random.Random(seed))
    except NoSuchExample:
        return found
    found.result = results[tuple(sorted(smallest.items()))]
    defaults = config_for(kind).to_dict()
    found.config = {k: v for k, v in smallest.items() if k in fixed or defaults.get(k) != v}   # what differs
    found.replay = replay_command(kind, impl, checks, found.config, seed)
    return found


def replay_command(kind, impl, checks, config, seed):
    """The ready-to-paste command that runs exactly this configuration again."""
    words = ["gradlab", "check", kind]
    if impl:
        words += ["--impl", str(impl)]
    if checks:
        words += ["--checks", checks if isinstance(checks, str) else ",".join(checks)]
    for name, value in config.items():
        if name == "dtype":
            continue
        words += ["--set", f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}"]
    if "dtype" in config:
        words += ["--dtype", config["dtype"]]
    return shlex.join(words + ["--seed", str(seed)])
