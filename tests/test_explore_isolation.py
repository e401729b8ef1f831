"""`gradlab check KIND --explore N` follows --isolate/--in-process like a plain
check: one worker for every drawn configuration (stopped before the result is
printed), or none at all."""
from gradlab.execution import remote
from gradlab.frontends.cli import main

def explore_with(zoo, capsys, monkeypatch, *flags):
    started = []
    original = remote.Session.start

    def start(self):
        info = original(self)
        started.append((self, self.proc))
        return info
    monkeypatch.setattr(remote.Session, "start", start)
    code = main(["check", "layernorm", "--impl", zoo("shapes_ok_layernorm_renamed.py"), "--explore", "3", "--seed", "0", "--checks", "smoke",
                 *flags])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    return started


def test_explore_in_process_starts_no_worker(zoo, capsys, monkeypatch):
    assert explore_with(zoo, capsys, monkeypatch, "--in-process") == []


def test_explore_isolated_uses_one_worker_and_stops_it(zoo, capsys, monkeypatch):
    started = explore_with(zoo, capsys, monkeypatch, "--isolate", "--wall-time", "60")
    assert len(started) == 1
    session, proc = started[0]
    assert session.proc is None and proc.poll() is not None     # stopped before main returned
    assert session.limits.wall == 60                            # the command line's limits reached the worker
