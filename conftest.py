"""Project-wide pytest setup: Hypothesis profiles (CI: no deadline, since a
2-core CI machine shared with xdist workers makes timings meaningless)."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", deadline=None, max_examples=30,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=15)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
