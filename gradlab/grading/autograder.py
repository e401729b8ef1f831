"""`gradlab autograder`: the zip Gradescope takes for a programming assignment.

    setup.sh          installs python3 and pip (apt-get), then requirements.txt into that python3 (pip)
    requirements.txt  gradlab==VERSION (with nbformat for notebooks)
    run_autograder    grades $GRADLAB_AUTOGRADER_ROOT/submission (default /autograder)
                      into $GRADLAB_AUTOGRADER_ROOT/results/results.json
    assignment.json   the assignment: kinds, seed, gradlab version
    rubric.toml       the rubric, when one was given

run_autograder calls `$GRADLAB_PYTHON -m gradlab grade` (default `python3`, the
one setup.sh installed gradlab into) on a folder holding the one submission,
then copies its results.json where Gradescope reads it. The root and the
Python are environment variables so a test (or a teacher) can run the script
against a fake root folder, with a Python that has gradlab, before uploading
(README, "Gradescope").
"""
import io
import shlex
import zipfile

from gradlab import __version__
from gradlab.contract.records import dumps
from gradlab.grading import rubric as rubric_mod
from gradlab.grading.outputs import atomic_write

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Written by gradlab {version}. Gradescope runs this with the working directory /autograder.
set -u
ROOT="${{GRADLAB_AUTOGRADER_ROOT:-/autograder}}"
SOURCE="${{GRADLAB_AUTOGRADER_SOURCE:-$ROOT/source}}"
PYTHON="${{GRADLAB_PYTHON:-python3}}"
WORK="$(mktemp -d)"
mkdir -p "$WORK/class" "$ROOT/results"
# the submission is one student: copy it in as one entry of a class of one
cp -r "$ROOT/submission" "$WORK/class/student"
"$PYTHON" -m gradlab grade "$WORK/class" --out "$WORK/out" {args}
status=$?
if [ -f "$WORK/out/student/results.json" ]; then
  cp "$WORK/out/student/results.json" "$ROOT/results/results.json"
else
  printf '{{"score": 0, "output": "gradlab could not grade this submission (exit status %s); the instructor sees the log.", "output_format": "text", "tests": []}}\\n' "$status" > "$ROOT/results/results.json"
fi
rm -rf "$WORK"
exit 0
"""

SETUP = """#!/usr/bin/env bash
# Written by gradlab {version}: Gradescope runs this once, when it builds the image.
set -e
apt-get update -qq && apt-get install -y -qq python3 python3-pip > /dev/null
python3 -m pip install --quiet -r /autograder/source/requirements.txt
"""


def build(path, kinds=None, rubric_path=None, seed=0, timeout=None, requirement=None):
    """Write the zip to `path`; returns the Rubric it grades with."""
    kinds = rubric_mod.parse_kinds(kinds) if kinds else None
    rubric = rubric_mod.load(rubric_path, kinds)   # a wrong rubric fails here, not on Gradescope
    args = ["--kinds", ",".join(rubric.kinds), "--seed", str(seed), "--workers", "1"]
    if rubric_path:
        args += ["--rubric", "$SOURCE/rubric.toml"]
    if timeout:
        args += ["--timeout", f"{timeout:g}"]
    quoted = " ".join(a if a.startswith("$SOURCE") else shlex.quote(a) for a in args)
    quoted = quoted.replace("$SOURCE/rubric.toml", '"$SOURCE/rubric.toml"')
    files = {
        "run_autograder": RUN_AUTOGRADER.format(version=__version__, args=quoted),
        "setup.sh": SETUP.format(version=__version__),
        "requirements.txt": f"{requirement or 'gradlab==' + __version__}\nnbformat>=5.7\n",
        "assignment.json": dumps({"kinds": list(rubric.kinds), "seed": seed, "gradlab": __version__}) + "\n",
    }
    if rubric_path:
        with open(rubric_path, encoding="utf-8") as fh:
            files["rubric.toml"] = fh.read()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in files.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name in ("run_autograder", "setup.sh") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, text)
    atomic_write(path, buf.getvalue())
    return rubric
