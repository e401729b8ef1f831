"""`gradlab check` forks its worker where zygote.refusal finds nothing against it (a
single-threaded process with one BLAS thread), and spawns it otherwise, as before."""
import os
import subprocess
import sys

import pytest

from gradlab.execution import zygote
from gradlab.execution.limits import Limits

# A file that says how its worker started: a forked worker has gradlab's command line loaded, a
# spawned one (a fresh interpreter) does not.
PROBE = '''
import sys
import numpy as np
import gradlab

FORKED = "gradlab.frontends.cli" in sys.modules

class Probe:
    def __init__(self, d):
        self.params = {"gamma": np.ones(d), "beta": np.zeros(d)}
        self.grads = {}

    def forward(self, x):
        raise RuntimeError(f"forked={FORKED}")

    def backward(self, g):
        return g

@gradlab.register("layernorm")
def build(cfg):
    return Probe(cfg.d_model)
'''


def _check(path, **env):
    run_env = {k: v for k, v in os.environ.items() if k != "GRADLAB_FORK_WORKERS"}
    run_env.update(env)
    done = subprocess.run([sys.executable, "-m", "gradlab", "check", "layernorm", "--impl", str(path),
                           "--checks", "smoke"], env=run_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    return done.stdout


def test_the_command_line_forks_its_worker_where_nothing_speaks_against_it(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    assert "forked=True" in _check(path, OPENBLAS_NUM_THREADS="1")
    # GRADLAB_FORK_WORKERS=0 turns it off, as for grading
    assert "forked=False" in _check(path, OPENBLAS_NUM_THREADS="1", GRADLAB_FORK_WORKERS="0")
    if (os.cpu_count() or 1) > 1:      # OpenBLAS's threads in gradlab's process: a fork would lose them
        assert "forked=False" in _check(path, OPENBLAS_NUM_THREADS="2")


def test_only_the_command_line_and_grading_fork(monkeypatch):
    monkeypatch.setattr(zygote, "ENABLED", False)
    monkeypatch.setattr(zygote, "_threads", lambda: 1)
    monkeypatch.delenv("GRADLAB_FORK_WORKERS", raising=False)
    assert "off" in zygote.refusal(None, Limits())                 # gradlab.check, the pytest plugin
    assert zygote.refusal(None, Limits(fork=True)) is None         # gradlab check / train
    monkeypatch.setenv("GRADLAB_FORK_WORKERS", "0")
    assert "off" in zygote.refusal(None, Limits(fork=True))


@pytest.mark.parametrize("argv", [["check", "layernorm"], ["train"]])
def test_the_command_lines_limits_allow_forking(argv):
    from gradlab.frontends import cli
    args = cli.build_parser().parse_args(argv)
    assert cli.run_limits(args).fork is True
