"""A notebook -> the Python source gradlab imports, and what it left out.

The rule (README, "Notebooks"): a notebook is graded on what it *defines*, so a
training loop, a download or a plot at the top level never runs. Of each code
cell, gradlab keeps only the top-level statements that define things:

- imports, `def`, `class` (decorated or not: `@gradlab.register(...)` included);
- assignments whose right-hand side calls nothing, or only NumPy/`math`
  functions and builtin constructors (`D = 64`, `rng = np.random.default_rng(0)`);
- `gradlab.register(...)(fn)` calls, docstrings, `assert`, `pass`;
- `if`/`try` blocks made only of the above.

Everything else (loops, `with`, other calls such as `train(model)` or
`plt.show()`, assignments from them, NumPy's file reading and writing such as
`np.load`) is skipped, and the result lists which cell and line were skipped.
A cell is said as "code cell N": code cells are counted from 1, markdown cells
not (a notebook's editor numbers no cell, and its execution counts change).
IPython magics and shell lines (`%...`, `!...`) are dropped; a cell magic
(`%%time`, ...) drops its cell. A cell that is not valid Python once those
lines are gone is skipped whole, with the reason.

A kept statement can still fail where the notebook ran fine (Colab's
`from google.colab import drive`, an allocation past the memory limit): each
kept statement other than `def` and `class` runs inside a `try`, so one that
raises is skipped at import, like the ones left out, and the rest of the
notebook is still graded. What it raised is written beside the generated file
(FAILED), which the grader reads into the student's notes (failures()).
"""
import ast

ALLOWED_CALL_ROOTS = {"np", "numpy", "math"}
ALLOWED_BUILTINS = {"dict", "list", "tuple", "set", "frozenset", "range", "int", "float", "str", "bool",
                    "len", "slice", "object", "sorted", "zip", "enumerate", "min", "max", "abs", "round"}
# NumPy functions that read or write files: data loading at the top level never runs (the files are not there)
NUMPY_FILE_IO = {"load", "loadtxt", "genfromtxt", "fromfile", "fromregex", "memmap", "save", "savez",
                 "savez_compressed", "savetxt", "tofile", "DataSource"}
FAILED = ".failed"          # beside the generated file: a line per kept statement that raised at import
GUARD = ("except Exception as _gradlab_error:\n"
         "    __import__('gradlab.grading.notebook', fromlist=['failed']).failed(__file__, {where!r}, _gradlab_error)")


def to_source(raw, name):
    """(python source, [notes], origins) for the notebook bytes `raw` named `name`; origins[k] is the
    (cell, line) that line k + 1 of the source comes from (None for the cells' headings), so a location in
    the source can be said as the student sees it (relocate()).
    Raises ValueError with one line when it is not a readable notebook."""
    import nbformat
    try:
        nb = nbformat.reads(raw.decode("utf-8-sig"), as_version=4)     # (a BOM, as Windows editors write)
    except Exception as e:   # nbformat raises several types for a broken file
        raise ValueError(f"{name} is not a readable notebook ({type(e).__name__}: {str(e).splitlines()[0][:200]})")
    lines, origins, notes = [], [], []
    number = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        number += 1
        kept, skipped = _cell(cell.source, f"{name}: code cell {number}")
        for line, what in skipped:
            notes.append(f"{name}: code cell {number}" + (f" line {line}" if line else "") + f": {what}")
        if not "".join(kept).strip():
            continue
        lines.append(f"# ---- {name}, code cell {number} ----")
        origins.append(None)
        for k, text in enumerate(kept, 1):       # a guarded statement's line holds its try/except lines too
            for part in text.split("\n"):
                lines.append(part)
                origins.append((number, k))
    return "".join(ln + "\n" for ln in lines), notes, origins


def relocate(text, generated, shown, origins):
    """`text` with the generated file's name `generated` said as the notebook's `shown`, and its lines as the
    notebook's cells and lines: "at nb_ipynb.py:29" -> "at nb.ipynb code cell 3 line 13" (a traceback's
    `"nb_ipynb.py", line 29` likewise). The generated file's numbers mean nothing to the student."""
    import re

    def said(match):
        number = match.group(1) or match.group(2)
        origin = origins[int(number) - 1] if number and 0 < int(number) <= len(origins) else None
        if origin is None:
            return shown + (f":{number}" if match.group(1) else f'", line {number}' if number else "")
        where = f"code cell {origin[0]} line {origin[1]}"
        return f"{shown} {where}" if match.group(1) else f'{shown}", {where}'
    return re.sub(r"(?<![\w-])" + re.escape(generated) + r'(?::(\d+)|", line (\d+))?', said, text)


def _cell(source, where):
    lines = source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        return [], [(None, f"skipped (cell magic {lines[0].split()[0]})" + _registers(source, "remove that line"))]
    # magics and shell lines become blank lines, so line numbers still match the cell
    clean = ["" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines]
    text = "\n".join(clean)
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        return [], [(e.lineno, f"skipped (not valid Python: {e.msg})" + _registers(source, "fix that cell"))]
    kept, skipped = list(clean), []
    for stmt in tree.body:
        first = clean[stmt.lineno - 1].strip()
        if not _defines(stmt):
            if not any(line == stmt.lineno for line, _ in skipped):    # `plt.plot(x); plt.show()`: one line, one note
                skipped.append((stmt.lineno, f"skipped `{first[:60]}` (runs code at the top level; "
                                             "only definitions are graded)"))
            for i in range(stmt.lineno - 1, stmt.end_lineno):
                kept[i] = ""     # blank, so the lines kept keep their numbers within the cell
        elif _guardable(stmt, tree.body):
            _guard(kept, stmt, f"{where} line {stmt.lineno}: skipped `{first[:60]}`")
    return kept, skipped


def _registers(source, fix):
    """For a cell skipped whole: the kinds it registers, so that the kind's own record says why it is missing
    (grading.job._missing_reason reads this note) instead of "add @gradlab.register(...)", which is there."""
    import re
    kinds = sorted(set(re.findall(r"""register\(\s*["'](\w+)["']""", source)))
    if not kinds:
        return ""
    held = ", ".join(f"register({k!r})" for k in kinds)
    return f"; it holds {held}, so {'that kind is' if len(kinds) == 1 else 'those kinds are'} not graded: {fix}"


def _guardable(stmt, body):
    """A kept statement that may raise at import and can be wrapped in a `try` as it is: not a definition
    (a def or class runs no code of the student's when defined), not `from __future__` (it must come first),
    alone on its lines, and holding no string that spans lines (indenting it would change the string)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass, ast.Global)):
        return False
    if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
        return False
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return False
    if any(other is not stmt and other.lineno <= stmt.end_lineno and stmt.lineno <= other.end_lineno
           for other in body):
        return False
    return not any(isinstance(n, (ast.Constant, ast.JoinedStr)) and n.lineno != n.end_lineno
                   for n in ast.walk(stmt))


def _guard(lines, stmt, where):
    """Wrap the statement's lines in `try: ... except Exception: failed(...)` (two lines more: the generated
    file's numbering is its own, notes give the cell's)."""
    first, last = stmt.lineno - 1, stmt.end_lineno - 1
    for i in range(first, last + 1):
        lines[i] = "    " + lines[i]
    lines[first] = "try:\n" + lines[first]
    lines[last] = lines[last] + "\n" + GUARD.format(where=where)


def failed(path, where, error):
    """Called at import by a notebook's generated source when a kept statement raised: the note, one line,
    goes beside the file for the grader (failures())."""
    words = (str(error).splitlines() or [""])[0][:160]
    raised = type(error).__name__ + (f": {words}" if words else "")
    note = f"{where} (it raised {raised}; the rest of the notebook is graded)"
    try:
        with open(path + FAILED, "a", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(note.replace("\n", " ") + "\n")
    except OSError:
        pass     # the statement is skipped all the same; only the note is lost


def failures(path, most=20):
    """The notes failed() left beside the generated file `path` (at most `most`; none for a .py file)."""
    try:
        with open(path + FAILED, encoding="utf-8", errors="replace") as fh:
            lines = fh.read(64 << 10).splitlines()
    except OSError:
        return []
    return [ln[:400] for ln in lines[:most]] + ([f"... and {len(lines) - most} more"] if len(lines) > most else [])


def _defines(stmt):
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                         ast.Pass, ast.Assert, ast.Global)):
        return True
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return stmt.value is None or _calls_allowed(stmt.value)
    if isinstance(stmt, ast.Expr):
        value = stmt.value
        if isinstance(value, ast.Constant):
            return True
        return _is_registration(value)
    if isinstance(stmt, ast.If):
        return all(_defines(s) for s in stmt.body + stmt.orelse) and _calls_allowed(stmt.test)
    if isinstance(stmt, ast.Try):
        return all(_defines(s) for s in stmt.body + stmt.orelse + stmt.finalbody) and all(
            _defines(s) for h in stmt.handlers for s in h.body)
    return False


def _is_registration(call):
    """gradlab.register("kind")(fn) or register("kind", ...)(fn)."""
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Call):
        inner = call.func.func
        name = inner.attr if isinstance(inner, ast.Attribute) else getattr(inner, "id", None)
        return name == "register" and all(_calls_allowed(a) for a in call.args)
    return False


def _calls_allowed(node):
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(sub, ast.Call):
            root = sub.func
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name):
                if isinstance(sub.func, ast.Name) and root.id in ALLOWED_BUILTINS:
                    continue
                if (isinstance(sub.func, ast.Attribute) and root.id in ALLOWED_CALL_ROOTS
                        and sub.func.attr not in NUMPY_FILE_IO):
                    continue
            return False
    return True
