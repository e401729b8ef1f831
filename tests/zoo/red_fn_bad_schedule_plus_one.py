"""Broken (one bug): treats step as 0-based (uses step + 1)."""
import gradlab


def lr_at(step, d_model, warmup_steps):
    s = step + 1                                                    # BUG: steps are counted from 1 already
    return d_model ** -0.5 * min(s ** -0.5, s * warmup_steps ** -1.5)


gradlab.register("schedule")(lr_at)
