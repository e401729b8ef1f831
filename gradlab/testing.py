"""The public face of gradlab's pytest helpers (README: "In pytest"):

    from gradlab.testing import parametrize_with_checks
"""
from gradlab.frontends.testing import CheckCase, cases, parametrize_with_checks, run_case, session_seed

__all__ = ["parametrize_with_checks", "CheckCase", "cases", "run_case", "session_seed"]
