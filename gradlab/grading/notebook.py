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
`plt.show()`, assignments from them) is skipped, and the result lists which
cell and line were skipped. IPython magics and shell lines (`%...`, `!...`)
are dropped; a cell magic (`%%time`, ...) drops its cell. A cell that is not
valid Python once those lines are gone is skipped whole, with the reason.
"""
import ast

ALLOWED_CALL_ROOTS = {"np", "numpy", "math"}
ALLOWED_BUILTINS = {"dict", "list", "tuple", "set", "frozenset", "range", "int", "float", "str", "bool",
                    "len", "slice", "object", "sorted", "zip", "enumerate", "min", "max", "abs", "round"}


def to_source(raw, name):
    """(python source, [notes]) for the notebook bytes `raw` named `name`.
    Raises ValueError with one line when it is not a readable notebook."""
    import nbformat
    try:
        nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
    except Exception as e:   # nbformat raises several types for a broken file
        raise ValueError(f"{name} is not a readable notebook ({type(e).__name__}: {str(e).splitlines()[0][:200]})")
    chunks, notes = [], []
    number = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        number += 1
        kept, skipped = _cell(cell.source)
        for line, what in skipped:
            notes.append(f"{name}: cell {number}" + (f" line {line}" if line else "") + f": {what}")
        if kept:
            chunks.append(f"# ---- {name}, code cell {number} ----\n{kept}\n")
    return "".join(chunks), notes


def _cell(source):
    lines = source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        return "", [(None, f"skipped (cell magic {lines[0].split()[0]})")]
    # magics and shell lines become blank lines, so line numbers still match the cell
    clean = ["" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines]
    text = "\n".join(clean)
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        return "", [(e.lineno, f"skipped (not valid Python: {e.msg})")]
    kept, skipped = list(clean), []
    for stmt in tree.body:
        if not _defines(stmt):
            first = clean[stmt.lineno - 1].strip()
            skipped.append((stmt.lineno, f"skipped `{first[:60]}` (runs code at the top level; "
                                         "only definitions are graded)"))
            for i in range(stmt.lineno - 1, stmt.end_lineno):
                kept[i] = ""     # blank, so the lines kept keep their numbers within the cell
    text = "\n".join(kept)
    return (text if text.strip() else ""), skipped


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
                if isinstance(sub.func, ast.Attribute) and root.id in ALLOWED_CALL_ROOTS:
                    continue
            return False
    return True
