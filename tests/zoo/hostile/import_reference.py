"""Two lines: gradlab's own reference LayerNorm, re-exported."""
import gradlab  # noqa: F401
from gradlab.modules.layernorm import *  # noqa: F401,F403
