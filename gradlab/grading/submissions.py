"""A class folder -> one entry per student.

SUBMISSIONS holds, per student, a sub-folder (every .py and .ipynb in it, at
any depth) or a single .py/.ipynb file; the entry's name (the file's name
without its suffix) is the student. A sub-folder's other files (a config.json,
an init.npy) go with its code, up to MAX_DATA_MB each and MAX_DATA_TOTAL_MB in
all: code that reads a file beside it finds it when graded, as when checked.
An entry travels by value (its files' bytes), so a job can run on another
machine; its content hash, data files included, decides whether a resumed run
grades it again.
"""
import hashlib
import os
import unicodedata
from dataclasses import dataclass, field

from gradlab.contract.errors import UsageError

SUFFIXES = (".py", ".ipynb")
SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints", ".git"}
MAX_FILE_MB = 64        # a .py or .ipynb larger than this is no submission's (a notebook with plots: a few MB)
# every entry is held in memory from discovery on (a class of 300 is read before the first is graded), so a
# data file is copied only when small: a config or initial weights, not a dataset
MAX_DATA_MB = 8         # one data file beside the code
MAX_DATA_TOTAL_MB = 16  # all of one submission's data files (the smallest first)


@dataclass
class Entry:
    student: str
    files: dict = field(default_factory=dict)     # relative path -> bytes: the code graded
    skipped: tuple = ()                           # (relative path, why) of .py/.ipynb files not read (_unreadable)
    data: dict = field(default_factory=dict)      # relative path -> bytes: its folder's other files, copied beside
    left_out: tuple = ()                          # (relative path, why) of its other files not copied

    def digest(self):
        """The hash of its files' names and bytes, data files too (a changed config.json grades it again)."""
        h = hashlib.sha256()
        every = {**self.files, **self.data}       # (a data file's name never ends in .py or .ipynb)
        for name in sorted(every):
            h.update(os.fsencode(name) + b"\0" + hashlib.sha256(every[name]).digest())
        return h.hexdigest()[:16]

    @property
    def others(self):
        """The paths of its files that are not code, copied or not (what a submission without code holds)."""
        return sorted([*self.data, *(path for path, _ in self.left_out)])


# what `gradlab grade` writes beside the students' folders (gradlab.grading.outputs): no student may be called so
CLASS_FILES = ("grades.csv", "class.json", "summary.html")


def discover(folder, exclude=(), ignored=None):
    """The entries of a class folder, sorted by student. UsageError when the
    folder is missing, holds no entry, two entries name the same student, or a
    student's name is one of the class files. `exclude`: paths that are not
    submissions (the output folder, when it is inside). `ignored`: a list that
    gets the names of the folder's files that are not submissions (a README,
    a .zip, UPPER.PY), to be told."""
    exclude = {os.path.abspath(p) for p in exclude}
    if os.path.exists(folder) and not os.path.isdir(folder):     # (one student's file, given for the class)
        raise UsageError(f"{folder}: is a file; grade takes the class's folder (SUBMISSIONS: one sub-folder or "
                         f".py/.ipynb file per student), e.g. gradlab grade {os.path.dirname(folder) or '.'} ...; "
                         "to check one file, gradlab check KIND --impl FILE")
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
        skipped, data, left_out = (), {}, ()
        why = _unreadable(path)
        if why is not None and (os.path.isdir(path) or name.endswith(SUFFIXES)):
            if ignored is not None:
                ignored.append(f"{name} ({why})")
            continue
        if os.path.isdir(path):
            student, (files, skipped, data, left_out) = name, _folder_files(path)
        elif name.endswith(SUFFIXES):
            student, files = os.path.splitext(name)[0], {name: _read(path)}
        else:
            if ignored is not None:
                ignored.append(name)     # a README, a CSV of names, a zip: not a submission
            continue
        if student in CLASS_FILES:
            raise UsageError(f"{folder}: {name} would be graded as student {student!r}, whose folder of results "
                             f"would take the place of the class's own {student} in the output folder; rename it")
        if student in entries:
            raise UsageError(f"{folder}: {where[student]} and {name} are both student {student!r}; "
                             "rename or remove one")
        same = [other for other in entries if _folded(other) == _folded(student)]
        if same:
            # (Zoë.py and zoë/, or Zoë in two Unicode forms: two rows that read alike, and one results folder on a
            # file system that ignores case or normalises names, macOS's and Windows')
            raise UsageError(f"{folder}: {where[same[0]]} and {name} name students that differ only in case or "
                             "Unicode form; their results would share a folder on macOS or Windows: rename one")
        entries[student], where[student] = Entry(student, files, skipped, data, left_out), name
    if not entries:
        raise UsageError(f"{folder}: no submissions (expected one sub-folder or .py/.ipynb file per student)")
    return list(entries.values())


def _folded(name):
    """A student name as a case-insensitive, normalising file system compares it."""
    return unicodedata.normalize("NFC", name).casefold()


def _folder_files(root):
    """({relative path: bytes} of its .py and .ipynb files, ((relative path, why) of those not read: _unreadable),
    {relative path: bytes} of its other files copied (_data_files), ((relative path, why) of those not copied))."""
    files, skipped, other = {}, [], []
    for here, dirs, names in os.walk(root):          # (a linked folder is listed, not entered)
        for d in sorted(dirs):
            if os.path.islink(os.path.join(here, d)) and d not in SKIP_DIRS and not d.startswith("."):
                skipped.append((os.path.relpath(os.path.join(here, d), root).replace(os.sep, "/"),
                                "a symbolic link to a folder: not followed"))
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            path = os.path.join(here, name)
            relative = os.path.relpath(path, root).replace(os.sep, "/")
            if name.endswith(SUFFIXES):
                why = _unreadable(path)
                if why is None:
                    files[relative] = _read(path)
                else:
                    skipped.append((relative, why))
            else:
                other.append((relative, path))
    data, left_out = _data_files(other)
    return files, tuple(skipped), data, left_out


def _data_files(candidates):
    """The files beside the code that are copied with it, ({relative path: bytes}, ((relative path, why) of the
    others)): regular files up to MAX_DATA_MB each, the smallest first while the submission's total stays
    within MAX_DATA_TOTAL_MB."""
    data, left_out, sized = {}, [], []
    for relative, path in candidates:
        why = _unreadable(path, MAX_DATA_MB)
        if why is None:
            sized.append((os.path.getsize(path), relative, path))
        else:
            left_out.append((relative, why))
    total, over = 0, f"over the {MAX_DATA_TOTAL_MB} MB a submission's other files may take in all"
    for size, relative, path in sorted(sized):
        if total + size > MAX_DATA_TOTAL_MB << 20:
            left_out.append((relative, over))
            continue
        data[relative] = _read(path)
        total += size
    return data, tuple(sorted(left_out))


def _unreadable(path, max_mb=MAX_FILE_MB):
    """Why a submission's file or folder is not read (None: it is). A symbolic link is not followed (it may
    lead to a classmate's files, gradlab's own reference or a device); only regular files are read (a FIFO
    blocks the reader, /dev/zero never ends), up to `max_mb`."""
    if os.path.islink(path):
        return "a symbolic link: not followed"
    if os.path.isdir(path):
        return None
    try:
        info = os.stat(path)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    import stat
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size > max_mb << 20:
        return f"larger than {max_mb} MB"
    return None


def _read(path):
    with open(path, "rb") as fh:
        return fh.read()
