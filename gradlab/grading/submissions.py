"""A class folder -> one entry per student.

SUBMISSIONS holds, per student, a sub-folder (every .py and .ipynb in it, at
any depth) or a single .py/.ipynb file; the entry's name (the file's name
without its suffix) is the student. An entry travels by value (its files'
bytes), so a job can run on another machine; its content hash decides whether
a resumed run grades it again.
"""
import hashlib
import os
from dataclasses import dataclass, field

from gradlab.contract.errors import UsageError

SUFFIXES = (".py", ".ipynb")
SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints", ".git"}


@dataclass
class Entry:
    student: str
    files: dict = field(default_factory=dict)     # relative path -> bytes

    def digest(self):
        h = hashlib.sha256()
        for name in sorted(self.files):
            h.update(os.fsencode(name) + b"\0" + hashlib.sha256(self.files[name]).digest())
        return h.hexdigest()[:16]


def discover(folder, exclude=()):
    """The entries of a class folder, sorted by student. UsageError when the
    folder is missing, holds no entry, or two entries name the same student.
    `exclude`: paths that are not submissions (the output folder, when it is inside)."""
    exclude = {os.path.abspath(p) for p in exclude}
    if not os.path.isdir(folder):
        raise UsageError(f"{folder}: no such folder (SUBMISSIONS is a folder with one sub-folder or "
                         ".py/.ipynb file per student)")
    entries, where = {}, {}
    for name in sorted(os.listdir(folder)):
        if name.startswith(".") or name in SKIP_DIRS:
            continue
        path = os.path.join(folder, name)
        if os.path.abspath(path) in exclude:
            continue
        if os.path.isdir(path):
            student, files = name, _folder_files(path)
        elif name.endswith(SUFFIXES):
            student, files = os.path.splitext(name)[0], {name: _read(path)}
        else:
            continue   # a README, a CSV of names: not a submission
        if student in entries:
            raise UsageError(f"{folder}: {where[student]} and {name} are both student {student!r}; "
                             "rename or remove one")
        entries[student], where[student] = Entry(student, files), name
    if not entries:
        raise UsageError(f"{folder}: no submissions (expected one sub-folder or .py/.ipynb file per student)")
    return list(entries.values())


def _folder_files(root):
    files = {}
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(names):
            if name.endswith(SUFFIXES) and not name.startswith("."):
                path = os.path.join(here, name)
                files[os.path.relpath(path, root).replace(os.sep, "/")] = _read(path)
    return files


def _read(path):
    with open(path, "rb") as fh:
        return fh.read()
