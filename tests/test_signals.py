"""SIGTERM and SIGHUP stop gradlab as Ctrl-C does (`kill`, `timeout`, a closed terminal, a batch system's end
of job): every worker, lane, grading job and forkserver stopped, their folders removed, one line, and exit
128 + the signal. Each run is the real command in a session of its own, with TMPDIR in the test's folder so
that what it leaves there is seen."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from gradlab_test_support import descendants, state

HOSTILE = Path(__file__).parent / "zoo" / "hostile"


def start(tmp_path, *args, preexec_fn=None):
    # (a short TMPDIR: grade's forkserver puts its socket there, and an AF_UNIX path has at most 107 bytes, which
    # pytest-xdist's tmp_path under /tmp/pytest-of-root/... could pass)
    tmp = Path(tempfile.mkdtemp(prefix="gls-", dir="/tmp" if os.path.isdir("/tmp") else None))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", TMPDIR=str(tmp))
    proc = subprocess.Popen([sys.executable, "-m", "gradlab", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True, cwd=tmp_path, preexec_fn=preexec_fn)
    return proc, tmp


def wait_for(proc, processes, seconds=60):
    """The descendants of proc once there are `processes` of them (the code is then in its endless loop)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        tree = descendants(proc.pid)
        if len(tree) >= processes:
            time.sleep(1.0)
            return descendants(proc.pid)
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError(f"gradlab started {descendants(proc.pid)}, not {processes} processes")


def stopped_cleanly(proc, tree, tmp, sig):
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (128 + sig, "gradlab: terminated\n"), out + err
    time.sleep(0.3)
    alive = [pid for pid in tree if state(pid) not in (None, "Z")]
    for pid in alive:                # (a failing run leaves nothing behind the test either)
        os.kill(pid, signal.SIGKILL)
    assert not alive
    left = list(tmp.iterdir())
    shutil.rmtree(tmp, ignore_errors=True)
    assert not left


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_check_stops_its_worker_and_removes_its_folder(tmp_path, sig):
    proc, tmp = start(tmp_path, "check", "layernorm", "--impl", str(HOSTILE / "loop_forward.py"), "--timeout", "60")
    tree = wait_for(proc, 1)
    os.kill(proc.pid, sig)
    stopped_cleanly(proc, tree, tmp, sig)


def test_sigterm_stops_cleanly_where_sigint_is_ignored(tmp_path):
    # a script's background job (`gradlab check ... &`) starts with SIGINT ignored: gradlab then installed no
    # handler at all, and SIGTERM killed it outright, its worker left running
    proc, tmp = start(tmp_path, "check", "layernorm", "--impl", str(HOSTILE / "loop_forward.py"), "--timeout", "60",
                      preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    tree = wait_for(proc, 1)
    os.kill(proc.pid, signal.SIGTERM)
    stopped_cleanly(proc, tree, tmp, signal.SIGTERM)


def test_check_in_lanes_stops_every_lane_on_a_groups_sigterm(tmp_path):
    # as `timeout -s TERM` sends it: to gradlab, then to its whole process group (the lanes too), so a lane gets
    # it and the coordinator's SIGINT after it; neither may cut the lane's stop of its worker short
    proc, tmp = start(tmp_path, "check", "all", "--impl", str(HOSTILE / "loop_in_one_kind.py"), "--timeout", "60",
                      "--workers", "2")
    tree = wait_for(proc, 3)
    os.kill(proc.pid, signal.SIGTERM)
    os.killpg(proc.pid, signal.SIGTERM)
    stopped_cleanly(proc, tree, tmp, signal.SIGTERM)


def test_grade_stops_its_jobs_and_their_workers(tmp_path):
    student = tmp_path / "class" / "alice"
    student.mkdir(parents=True)
    for name in ("loop_forward.py", "_layernorm.py"):
        (student / name).write_text((HOSTILE / name).read_text())
    proc, tmp = start(tmp_path, "grade", str(tmp_path / "class"), "--kinds", "layernorm", "--out",
                      str(tmp_path / "out"), "--workers", "1")
    tree = wait_for(proc, 3)         # the forkserver, the judging job, its worker in the loop
    os.kill(proc.pid, signal.SIGTERM)
    stopped_cleanly(proc, tree, tmp, signal.SIGTERM)


def test_sighup_ignored_by_nohup_stays_ignored(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "gradlab", "check", "layernorm", "--impl",
                             str(HOSTILE / "loop_forward.py"), "--checks", "smoke", "--timeout", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=dict(os.environ, OPENBLAS_NUM_THREADS="1", TMPDIR=str(tmp)),
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    wait_for(proc, 1)
    os.kill(proc.pid, signal.SIGHUP)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "forward ran past 3 s" in out, out + err


def test_a_tmpdir_too_long_for_the_graders_socket_is_one_line(tmp_path):
    # multiprocessing's forkserver listens on a socket in TMPDIR: 'OSError: AF_UNIX path too long', a traceback
    long_tmp = tmp_path / ("t" * 110)
    long_tmp.mkdir()
    student = tmp_path / "class" / "alice"
    student.mkdir(parents=True)
    (student / "ln.py").write_text((HOSTILE / "_layernorm.py").read_text())
    run = subprocess.run([sys.executable, "-m", "gradlab", "grade", str(tmp_path / "class"), "--kinds", "layernorm",
                          "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, TMPDIR=str(long_tmp)))
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.strip().endswith("set TMPDIR to a shorter folder, e.g. /tmp"), run.stderr
