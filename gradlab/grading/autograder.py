"""`gradlab autograder`: the zip Gradescope takes for a programming assignment.

    setup.sh          installs python3 and pip (apt-get), then requirements.txt into that python3 (pip)
    requirements.txt  gradlab==VERSION, or --requirement (with nbformat for notebooks)
    packages/FILE     the wheel (or sdist) --requirement names on this machine, installed from the zip
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

gradlab is not on PyPI under its name (PyPI's "gradlab" is another project), so
the default requirement installs it only from an index that has it: `gradlab
autograder` warns when this gradlab came from elsewhere (a checkout, a wheel: PEP
610's direct_url.json), naming --requirement with a wheel, which goes in the zip.
"""
import io
import os
import shlex
import zipfile

from gradlab import __version__
from gradlab.contract.errors import UsageError
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
cd "$(dirname "$0")"     # requirements.txt may name a wheel shipped beside it (pip reads a path from here)
python3 -m pip install --quiet -r requirements.txt
"""
# a --requirement that pip reads as a file (a path with a slash, or starting with ".", or an archive's name)
ARCHIVES = (".whl", ".tar.gz", ".tgz", ".tar.bz2", ".zip")
PACKAGES = "packages"     # the zip's folder for a wheel the teacher built


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
        "assignment.json": dumps({"kinds": list(rubric.kinds), "seed": seed, "gradlab": __version__}) + "\n",
    }
    local = _local_file(requirement)
    if local is not None:
        shipped = f"{PACKAGES}/{os.path.basename(local)}"
        with open(local, "rb") as fh:
            files[shipped] = fh.read()
        requirement = f"./{shipped}"
    files["requirements.txt"] = f"{requirement or default_requirement()}\nnbformat>=5.7\n"
    if rubric_path:
        with open(rubric_path, encoding="utf-8") as fh:
            files["rubric.toml"] = fh.read()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():     # (text, or a shipped wheel's bytes)
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name in ("run_autograder", "setup.sh") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, content)
    atomic_write(path, buf.getvalue())
    return rubric


def default_requirement():
    return f"gradlab=={__version__}"


def _local_file(requirement):
    """The file on this machine that `requirement` names, as pip reads it (None: a name spec, a URL or a pip
    option); UsageError when there is no such file."""
    if not requirement or "://" in requirement or "@" in requirement or requirement.startswith("-"):
        return None
    if not ("/" in requirement or os.sep in requirement or requirement.startswith(".")
            or requirement.endswith(ARCHIVES)):
        return None
    if os.path.isdir(requirement):
        raise UsageError(f"--requirement {requirement}: is a folder; build a wheel from it "
                         f"(python -m pip wheel --no-deps -w dist {requirement}) and give that file, or a URL")
    if not os.path.isfile(requirement):
        raise UsageError(f"--requirement {requirement}: no such file (a wheel to ship in the zip: build it first, "
                         "python -m pip wheel --no-deps -w dist GRADLAB_SOURCE; or give a URL or NAME==VERSION)")
    return requirement


def default_requirement_warning():
    """One line when the default requirement cannot install this gradlab on Gradescope (None: it can)."""
    origin = _origin()
    if origin is None:
        return None
    wheel = f"dist/gradlab-{__version__}-py3-none-any.whl"
    fix = (f"--requirement {origin}" if origin.endswith(".whl") else
           f"a wheel: python -m pip wheel --no-deps -w dist {origin if os.path.isdir(origin) else 'GRADLAB_SOURCE'}"
           f", then --requirement {wheel}")
    return (f"warning: this gradlab was installed from {origin}, not from a package index, so setup.sh cannot "
            f"install it as {default_requirement()} (PyPI's gradlab is another project): give {fix} (it goes in the "
            "zip), or --requirement URL")


def _origin():
    """Where this gradlab was installed from when not by name from a package index (PEP 610: pip leaves
    direct_url.json for a checkout, a file or a URL): a path, a URL or a few words; None from an index."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlsplit
    try:
        dist = metadata.distribution("gradlab")
    except metadata.PackageNotFoundError:
        return "a folder on sys.path (it is not installed)"
    if dist.version != __version__:
        return f"a folder on sys.path (the gradlab installed is {dist.version})"
    try:
        url = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        url = {}
    if url is None:
        return None
    url = url.get("url", "") if isinstance(url, dict) else ""
    return unquote(urlsplit(url).path) if url.startswith("file://") else (url or "a file")
