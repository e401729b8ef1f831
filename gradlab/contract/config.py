"""The read-only `cfg` handed to a student's `build(cfg)` (CONTRACT §1)."""
import copy
import dataclasses
import difflib
from dataclasses import dataclass, field

import numpy as np

from gradlab.contract import options
from gradlab.contract.errors import UsageError


@dataclass(frozen=True)
class Config:
    # Small on purpose, yet large enough that bugs show: T > 1, T < max_len,
    # H > 1, T != D, d_ff != D (so no weight but out_weight is square).
    batch_size: int = 2
    seq_len: int = 5
    d_model: int = 12
    num_heads: int = 2
    d_ff: int = 20
    vocab_size: int = 11
    max_len: int = 8
    n_layers: int = 2
    eps: float = 1e-5
    seed: int = 0
    dtype: str = "float64"
    # optimizers
    lr: float = 1e-2
    beta1: float = 0.9
    beta2: float = 0.999
    weight_decay: float = 0.01
    momentum: float = 0.9
    max_norm: float = 1.0
    warmup_steps: int = 4
    # mixed precision (loss scaling)
    loss_scale: float = 1024.0
    loss_scaling: str = "dynamic"     # "dynamic" (halve on overflow, grow after growth_interval good steps) | "static"
    growth_interval: int = 4
    # ffn: "gelu" (tanh approximation, the contract's default) or "relu"
    activation: str = "gelu"
    # dropout: the probability of dropping an entry while training
    dropout: float = 0.1
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        # every field through the one table of types and ranges (gradlab/contract/options.py)
        for name in options.FIELDS:
            object.__setattr__(self, name, options.check_field(name, getattr(self, name)))
        object.__setattr__(self, "dtype", options.check_dtype(self.dtype))
        options.check_relations(self)

    @property
    def d_k(self):
        return self.d_model // self.num_heads

    @property
    def np_dtype(self):
        return np.dtype(self.dtype)

    def __getitem__(self, name):  # cfg["d_model"] for dict-minded students
        return getattr(self, name)

    def get(self, name, default=None):
        return getattr(self, name, self.extra.get(name, default))

    def replace(self, **changes):
        """A copy with `changes`, each through its rule, then the rules that tie fields together. The fields
        kept were checked when self was made (a cfg is made several times per run, and checking every field
        of every one was half the cost of planning a run). `extra` is copied, never shared."""
        unknown = [name for name in changes if name not in FIELDS and name != "extra"]
        if unknown:
            raise TypeError(f"Config has no field {unknown[0]!r}")
        new = object.__new__(Config)
        new.__dict__.update(self.__dict__)
        for name, value in changes.items():
            object.__setattr__(new, name, dict(value) if name == "extra" else options.check_field(name, value))
        if "extra" not in changes:
            object.__setattr__(new, "extra", dict(self.extra))
        options.check_relations(new)
        return new

    def to_dict(self):
        """The fields and the extra sizes in one new dict (containers copied; built field by field: it goes
        with every module built in a worker, and dataclasses.asdict's deep copy took 50 us)."""
        d = {name: getattr(self, name) for name in _NAMES}
        d.update(self.extra)
        return {k: copy.deepcopy(v) if isinstance(v, (list, dict, set)) else v for k, v in d.items()}


# the weight decay the optimizer checks turn on when cfg's is 0 (trajectory's second run, input_mutation's): a decay
# applied the wrong way, or in place on the caller's gradient, shows whatever the kind's default
OTHER_DECAY = 0.01

FIELDS = {f.name: f for f in dataclasses.fields(Config) if f.name != "extra"}
_NAMES = tuple(FIELDS)
_DEFAULT = Config()     # the defaults, checked once; make_config's changes are checked one by one


def parse_value(name, text):
    """Turn the text of `--set name=value` into a number for the numeric fields
    (their rule in options.FIELDS then checks type and range); text stays text."""
    f = FIELDS[name]
    kind = f.type if isinstance(f.type, type) else {"int": int, "float": float, "str": str}[f.type]
    if kind is str:
        return text
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"--set {name}={text}: {name} takes {kind.__name__} values; "
                         f"e.g. --set {name}={f.default}") from None


def make_config(base=None, **overrides):
    """Build a Config from field overrides, with errors that name the field."""
    for name in overrides:
        if name not in FIELDS:
            close = difflib.get_close_matches(name, FIELDS, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"fields are: {', '.join(FIELDS)}"
            raise UsageError(f"unknown config field {name!r}; {hint}")
    overrides = {k: parse_value(k, v) if isinstance(v, str) and FIELDS[k].type not in (str, "str") else v
                 for k, v in overrides.items()}
    if "dtype" in overrides:
        overrides["dtype"] = np.dtype(overrides["dtype"]).name if _is_dtype(overrides["dtype"]) else overrides["dtype"]
    return (base or _DEFAULT).replace(**overrides)


def _is_dtype(value):
    try:
        np.dtype(value)
        return True
    except (TypeError, ValueError):
        return False
