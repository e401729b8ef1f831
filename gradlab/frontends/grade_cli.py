"""`gradlab grade` and `gradlab autograder`: the teacher's commands (added to the
`gradlab` parser by cli.py; the work is in gradlab.grading)."""
import dataclasses
import os

from gradlab.contract import options
from gradlab.contract.errors import UsageError

COMMANDS = ("grade", "autograder")
DEFAULT_WALL = 300.0     # seconds for one whole submission (gradlab.grading.job's, not imported here: it is heavy)

GRADE_EXAMPLES = """\
examples:
  gradlab grade submissions/ --kinds attention,layernorm --out grades/
  gradlab grade submissions/ --rubric rubric.toml --out grades/ --seed 7 --workers 4 --timeout 120
  gradlab grade submissions/ --kinds attention --out grades/ --scheduler tcp://10.0.0.5:8786

SUBMISSIONS holds one sub-folder or .py/.ipynb file per student. Running the same
command again grades only what changed. Exit status: 0 the class was graded
(whatever the students scored), 2 the command could not run.
"""


def add_parsers(sub):
    import argparse
    g = sub.add_parser("grade", help="grade a class: one folder or file per student -> scores, Gradescope results",
                       epilog=GRADE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("submissions", metavar="SUBMISSIONS", help="folder with one sub-folder or .py/.ipynb per student")
    g.add_argument("--kinds", metavar="K1,K2", help="the assignment's kinds (default: the rubric's)")
    g.add_argument("--out", required=True, metavar="OUT", help="folder for the results (created)")
    g.add_argument("--rubric", metavar="FILE", help="points and visibility per check (TOML; README, Rubric)")
    g.add_argument("--seed", type=int, help="seed shared by every student (default: the one OUT was graded "
                                            "with, else fresh; printed)")
    g.add_argument("--workers", type=int, metavar="N", help="submissions graded at a time (default: cores)")
    g.add_argument("--timeout", type=float, metavar="SECONDS",
                   help=f"wall time for one whole submission (default {DEFAULT_WALL:g})")
    g.add_argument("--call-timeout", type=float, metavar="SECONDS",
                   help="time for one call into a student's code, a forward or a backward (default 20)")
    g.add_argument("--max-memory", type=float, metavar="MB",
                   help="address space of a student's worker process (default 4096; 0: none)")
    g.add_argument("--max-output", type=float, metavar="MB",
                   help="what a student's code may print (default 16; 0: none)")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="a Dask scheduler (tcp://host:8786) to send the jobs to instead of local processes")

    a = sub.add_parser("autograder", help="write the zip Gradescope takes (setup.sh, run_autograder)")
    a.add_argument("--kinds", metavar="K1,K2", help="the assignment's kinds (default: the rubric's)")
    a.add_argument("--rubric", metavar="FILE", help="points and visibility per check (TOML)")
    a.add_argument("--out", required=True, metavar="ZIP", help="where to write the zip, e.g. autograder.zip")
    a.add_argument("--seed", type=int, default=0, help="seed every submission is graded with (default 0)")
    a.add_argument("--timeout", type=float, metavar="SECONDS",
                   help=f"wall time for one submission (default {DEFAULT_WALL:g})")
    a.add_argument("--requirement", metavar="PIP_SPEC",
                   help="how Gradescope's image installs gradlab (default gradlab==VERSION): a URL, or a wheel "
                        "file here, which goes in the zip")


def run(args):
    if args.command == "grade":
        return cmd_grade(args)
    return cmd_autograder(args)


def cmd_grade(args):
    from gradlab.grading.job import Limits
    from gradlab.grading.run import grade_class
    options.check_workers(args.workers, does="grades no submission")
    args.seed = options.check_seed(args.seed)
    check_wall(args.timeout)
    limits = Limits() if args.timeout is None else Limits(wall=args.timeout)
    if args.call_timeout is not None:
        limits = dataclasses.replace(limits, call=options.check_timeout(args.call_timeout, "--call-timeout"))
    for flag, value, field in (("--max-memory", args.max_memory, "memory_mb"),
                               ("--max-output", args.max_output, "output_mb")):
        if value is not None:
            limits = dataclasses.replace(limits, **{field: options.check_limit(flag, value)})
    if not args.kinds and not args.rubric:
        raise UsageError("give --kinds K1,K2 (or a --rubric that names the kinds)")
    check_out(args.out, args.submissions)
    if args.scheduler is not None:
        check_scheduler(args.scheduler)
    grade_class(args.submissions, args.out, kinds=args.kinds, rubric_path=args.rubric, seed=args.seed,
                workers=args.workers, limits=limits, scheduler=args.scheduler)
    return 0


def check_out(out, submissions):
    """--out may not be the submissions folder or inside it: the next run would read the grades as students."""
    real, subs = os.path.realpath(out), os.path.realpath(submissions)
    if real == subs or real.startswith(subs + os.sep):
        raise options.refuse(f"--out {out}", "is inside the submissions folder, where the next run would read the "
                             "grades as submissions", "write them beside it, e.g. --out grades/")


def check_scheduler(address):
    """--scheduler: a Dask address, tcp://host:port (the scheme may be left out), checked before any grading."""
    from urllib.parse import urlsplit
    try:
        parts = urlsplit(address if "://" in address else f"tcp://{address}")
        ok = bool(parts.hostname) and parts.port is not None
    except ValueError:
        ok = False
    if not ok:
        raise options.refuse(f"--scheduler {address}", "is not a scheduler address",
                             "write it as tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786")


def check_wall(seconds):
    """--timeout of `grade`: seconds for a whole submission, > 0 and finite."""
    import math
    if seconds is not None and not (0 < seconds < math.inf):
        raise options.refuse(f"--timeout {seconds:g}", "a submission needs a finite time limit above 0 s",
                             "e.g. --timeout 300 (seconds for one whole submission)")


def cmd_autograder(args):
    from gradlab.grading.autograder import build, default_requirement_warning
    args.seed = options.check_seed(args.seed)
    check_wall(args.timeout)
    if not args.kinds and not args.rubric:
        raise UsageError("give --kinds K1,K2 (or a --rubric that names the kinds)")
    if not args.out.endswith(".zip"):
        raise UsageError(f"--out {args.out}: give a .zip path, e.g. --out autograder.zip")
    if os.path.isdir(args.out):
        raise UsageError(f"--out {args.out}: is a folder")
    rubric = build(args.out, kinds=args.kinds, rubric_path=args.rubric, seed=args.seed, timeout=args.timeout,
                   requirement=args.requirement)
    print(f"wrote {args.out}: {', '.join(rubric.kinds)}, {rubric.max_score():g} points, seed {args.seed}; "
          "upload it as the assignment's autograder")
    warning = None if args.requirement else default_requirement_warning()
    if warning:
        print(warning)
    return 0
