"""Turning `impl` (a file path, a module name, a factory, or None) into the
registrations it makes. Everything that stops a run before any check starts
becomes a one-line UsageError that says what to fix."""
import hashlib
import importlib
import importlib.util
import inspect
import os
import pkgutil
import sys
import types
from dataclasses import dataclass, field

from gradlab.contract.errors import UsageError
from gradlab.execution.harness import guarded, student_frame
from gradlab.contract.registry import Misnamed, Registration, collecting

REFERENCE = "reference"


@dataclass
class Implementation:
    name: str                                   # what the user passed, for messages and JSON
    registrations: dict = field(default_factory=dict)   # kind -> Registration
    files: tuple = ()                            # student files, to point at their frames
    refused: dict = field(default_factory=dict)  # kind -> why its registration does not count
    refused_own: tuple = ()                      # those of them the file wrote itself (not a reference's import)

    def get(self, kind):
        try:
            return self.registrations[kind]
        except KeyError:
            raise missing_kind(self, kind) from None

    def close(self):
        """Nothing to stop: the code runs in this process (a RemoteImplementation stops its worker)."""


def missing_kind(loaded, kind):
    if kind in loaded.refused:
        return UsageError(loaded.refused[kind])
    have = ", ".join(loaded.registrations) or "nothing"
    return UsageError(f"{loaded.name} registers no {kind!r} module (it registers {have}); "
                      f"add @gradlab.register({kind!r}) above its build(cfg) factory")


# ---- where the student's code runs: the seam the run plan calls ----------------------------

ISOLATE_BY_DEFAULT = True    # files and module names run in a worker process unless told otherwise


def wants_worker(impl, isolate=None):
    """Whether `impl` runs in a worker process. isolate=None: yes for a file or a
    module name, no for gradlab's reference and for Python objects (factories)."""
    if isolate is None:
        return ISOLATE_BY_DEFAULT and isinstance(impl, (str, os.PathLike)) and impl != REFERENCE
    if isolate and callable(impl):
        raise UsageError(f"{getattr(impl, '__qualname__', 'this factory')} is a Python object, which runs in "
                         "gradlab's own process; to run it in a worker process, pass the path of its file as impl")
    return bool(isolate)


def open_implementation(impl, isolate=None, limits=None):
    """The Implementation to check: loaded here, or in a worker process (a
    RemoteImplementation with the same interface, whose registrations call
    into the worker). Close it when the run ends."""
    if not wants_worker(impl, isolate):
        return load(impl)
    from gradlab.execution.limits import Limits
    from gradlab.execution.remote import RemoteImplementation
    where = None if impl is None or impl == REFERENCE else _absolute(impl)
    if where is not None and os.path.isabs(where):
        _require_file(impl)       # here, where the current folder is the user's (the worker runs in its own)
    try:
        return RemoteImplementation(where, limits or Limits(), shown_as=impl)
    except UsageError as e:
        text = str(e)
        if where is not None and os.fspath(impl) != where:
            text = text.replace(where, os.fspath(impl))
        raise UsageError(text) from e.__cause__


def _require_file(path):
    """UsageError for a file that is not there, saying where a relative path was looked for."""
    full = os.path.abspath(path)
    if not os.path.exists(full):
        where = "" if os.path.isabs(os.fspath(path)) else \
            f" (looked for {full}: a relative path is read from the current folder, {os.getcwd()})"
        raise UsageError(f"no such file: {os.fspath(path)}{where}")


def _absolute(impl):
    """A file path made absolute (the worker runs in a folder of its own); a module name as it is."""
    text = os.fspath(impl)
    if text.endswith(".py") or os.sep in text or os.path.exists(text):
        return os.path.abspath(text)
    return text


_reference_cache = None


def load(impl):
    """Load an implementation. `impl` is None (gradlab's reference), a path to a
    .py file, an importable module name, or a registered callable."""
    if impl is None or impl == REFERENCE:
        return reference()
    if callable(impl):
        regs = list(getattr(impl, "__gradlab__", ()))
        name = getattr(impl, "__qualname__", repr(impl))
        return Implementation(name, _index(regs, name) if regs else {}, _source_file(impl))
    if not isinstance(impl, (str, os.PathLike)):
        raise UsageError(f"impl must be a file path, a module name or a registered function, not {type(impl).__name__}")
    text = os.fspath(impl)
    if text.endswith(".py") or os.sep in text or os.path.exists(text):
        return _load_file(text)
    return _load_module_name(text)


def reference():
    """gradlab's own modules, registered through the same gradlab.register.
    Read from the tags each module's own decorators left on its functions (the
    first tag of a function defined there), so a student's file that imported
    a reference module first, or registered a reference function again under
    another kind, changes nothing here."""
    global _reference_cache
    if _reference_cache is None:
        from gradlab import modules as package
        regs = []
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for value in vars(module).values():
                tags = getattr(value, "__gradlab__", None) if callable(value) else None
                if tags and getattr(value, "__module__", None) == module.__name__:
                    regs.append(tags[0])
        _reference_cache = Implementation(REFERENCE, _index(regs, REFERENCE))
    return _reference_cache


def is_reference_code(target):
    """True when `target` is one of gradlab's reference implementations (gradlab.modules)."""
    fn = getattr(target, "func", target)          # functools.partial
    module = getattr(fn, "__module__", None) or ""
    return module == "gradlab.modules" or module.startswith("gradlab.modules.")


def reference_method(obj, names=("forward", "backward", "step", "__call__")):
    """'gradlab.modules.attention.MultiHeadAttention.forward' when an object a submission built runs one of
    gradlab's reference methods as its own (a factory returning gradlab's module, or a subclass that overrides
    nothing); None otherwise, or when the class cannot be read."""
    try:
        cls = type(obj)
        for name in names:
            fn = getattr(cls, name, None)
            fn = getattr(fn, "__func__", fn)
            if fn is not None and is_reference_code(fn):
                return f"{fn.__module__}.{getattr(fn, '__qualname__', name)}"
    except Exception:      # a hostile class: judged by its calls
        pass
    return None


def same_kind_children(kind, held):
    """The (path, method) pairs of `held` (reference_children) that run gradlab's reference of `kind`
    itself: a method of the module its reference factory is defined in (gradlab.modules.attention for
    "attention"). Another kind's reference, borrowed as a part (a LayerNorm in a block), is not among them."""
    home = getattr(reference().registrations.get(kind), "target", None)
    home = getattr(home, "__module__", None)
    return [(path, method) for path, method in held if home and method.startswith(home + ".")]


def reference_children(obj):
    """[(path, method)] for the child modules of an object a submission built that run one of gradlab's
    reference methods as their own ("attn", "gradlab.modules.attention.CausalSelfAttention.forward"): gradlab's
    module held inside the student's. Which of them matter (the same kind's reference) is the caller's to say."""
    from gradlab.execution.discovery import child_modules
    out = []
    try:
        for path, child, earlier in child_modules(obj):
            ref = reference_method(child) if earlier is None else None
            if ref:
                out.append((path, ref))
    except Exception:      # a hostile class: judged by its calls
        pass
    return out


def calls_reference(target, kind):
    """'gradlab.modules.functional.softmax' when `target`, a function, calls gradlab's reference for the same
    kind by name (`return softmax_ref(x)`, `return functional.softmax(x)`, in nested functions and in the
    file's own helper functions it calls too); None otherwise. Read from its code's names: a wrapper that
    only passes the call on to the reference."""
    fn = getattr(target, "func", target)
    code, names_of = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
    if not isinstance(code, types.CodeType) or not isinstance(names_of, dict):
        return None
    names, stack, seen = set(), [code], {code}
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        inner = [k for k in c.co_consts if isinstance(k, types.CodeType)]
        # and the file's own helper functions it calls by name (softmax -> _h -> functional.softmax)
        inner += [h.__code__ for h in (names_of.get(n) for n in c.co_names) if isinstance(h, types.FunctionType)
                  and h.__globals__ is names_of]
        stack.extend(k for k in inner if k not in seen and len(seen) < 200)
        seen.update(inner)
    found = [names_of.get(n) for n in names]
    found += [getattr(m, n, None) for m in list(found) if isinstance(m, types.ModuleType)
              and (m.__name__ + ".").startswith("gradlab.modules.") for n in names]
    for obj in found:
        tags = getattr(obj, "__gradlab__", None) if callable(obj) and is_reference_code(obj) else None
        if isinstance(tags, (list, tuple)) and any(getattr(t, "kind", None) == kind for t in tags):
            return f"{obj.__module__}.{getattr(obj, '__qualname__', kind)}"
    return None


_homes = None


def _reference_homes():
    """{module name: the kinds whose reference is registered there}, worked out once, before any student code
    runs (_load_file: a submission may patch builtins or gradlab at import), from the reference files' text
    (gradlab.register("kind") in gradlab/modules/NAME.py), without importing them: in a worker, gradlab's
    reference modules are not loaded when the student's code runs, so that its import of one is seen."""
    global _homes
    if _homes is None:
        import re
        homes = {}
        spec = importlib.util.find_spec("gradlab.modules")
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for entry in sorted(os.listdir(folder)):
                if entry.endswith(".py") and not entry.startswith("_"):
                    with open(os.path.join(folder, entry), encoding="utf-8") as fh:
                        kinds = set(re.findall(r"""register\(\s*["'](\w+)["']""", fh.read()))
                    if kinds:
                        homes[f"gradlab.modules.{entry[:-3]}"] = kinds
        _homes = homes
    return _homes


def holds_reference(target, kind, siblings=()):
    """'gradlab.modules.layernorm.layernorm_backward' when the module `target` (a registered factory or function)
    is defined in, or another module of the submission's (`siblings`: its helper files), holds gradlab's reference
    code of `kind`: among its top-level names, the reference module of that kind alone, or anything defined there
    (its class, its helper functions), a function tagged with the kind (functional.softmax for "softmax"), a class
    named as the kind (optim.Adam for "adam"); or, in the code of its functions and classes, a dotted
    gradlab.modules.NAME[.MEMBER] that is one of those. None otherwise: another kind's reference borrowed as a
    part (a LayerNorm in a block, gradlab's softmax in a cross-entropy) is the student's code, and so is a module
    hosting several kinds' references (gradlab.modules.functional) held whole, which says nothing of which is used."""
    fn = getattr(target, "func", target)
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    if module is None or is_reference_code(fn):
        return None
    for candidate in [module] + [m for m in siblings if m is not module]:
        found = _held_in(candidate, kind)
        if found:
            return found if candidate is module else f"{found}, in {os.path.basename(candidate.__file__)}"
    return None


def _submission_modules(before, folder):
    """The modules imported from the submission's folder since `before` (sys.modules' names then): its own
    helper files, as this import of it brought them in (not a file checked earlier in this process)."""
    folder = os.path.join(os.path.abspath(folder), "")
    out = []
    for name in set(sys.modules) - before:
        path = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(path, str) and os.path.abspath(path).startswith(folder):
            out.append(sys.modules[name])
    return out


def _reference_kinds(name, member=None, value=None):
    """The kinds a piece of gradlab.modules.NAME (the module itself when member is None) is the reference of."""
    homes = _reference_homes().get(name, set())
    if member is None:
        return homes if len(homes) == 1 else set()
    tags = getattr(value, "__gradlab__", None)
    if isinstance(tags, (list, tuple)) and tags:
        return {getattr(t, "kind", None) for t in tags}
    if len(homes) == 1:
        return homes
    return {k for k in homes if str(member).lower() == k}       # optim.Adam: adam's, in a file of three kinds


def _held_in(module, kind):
    try:
        values = list(vars(module).values())
    except TypeError:
        return None
    codes = []
    for value in values:
        try:
            if isinstance(value, types.ModuleType):
                if kind in _reference_kinds(value.__name__):
                    return value.__name__
                continue
            name = getattr(value, "__module__", None)
            if name == module.__name__:              # the file's own functions and classes: their code
                codes += _codes_of(value)
                continue
            if not isinstance(name, str) or not (name + ".").startswith("gradlab.modules."):
                continue
            member = getattr(value, "__name__", None)
            if kind in _reference_kinds(name, member, value):
                return f"{name}.{getattr(value, '__qualname__', '')}".rstrip(".")
        except Exception:          # a hostile object: judged by its calls
            continue
    return _dotted(codes, kind)


def _codes_of(value):
    """The code objects of a function, or of a class's functions (methods, static and class methods)."""
    fn = getattr(value, "__func__", value)
    if isinstance(fn, types.FunctionType):
        return [fn.__code__]
    if isinstance(value, type):
        out = []
        for item in vars(value).values():
            item = getattr(item, "__func__", item)
            if isinstance(item, types.FunctionType):
                out.append(item.__code__)
        return out
    return []


def _dotted(codes, kind):
    """'gradlab.modules.layernorm' when some code reads gradlab.modules.NAME[.MEMBER], the reference of `kind`
    (`import gradlab.modules.layernorm` binds only `gradlab`)."""
    import dis
    stack, seen = list(codes), set()
    while stack:
        code = stack.pop()
        if code in seen or len(seen) > 500:
            continue
        seen.add(code)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        names = [(i.opname, i.argval) for i in dis.get_instructions(code)]
        for at, (op, arg) in enumerate(names[:-2]):
            if arg != "gradlab" or op not in ("LOAD_GLOBAL", "LOAD_NAME") or names[at + 1] != ("LOAD_ATTR", "modules"):
                continue
            chain = [a for o, a in names[at + 2:at + 4] if o in ("LOAD_ATTR", "LOAD_METHOD")]
            if not chain:
                continue
            name = f"gradlab.modules.{chain[0]}"
            if len(chain) == 1 or chain[1] is None:
                if kind in _reference_kinds(name):
                    return name
                continue
            value = getattr(sys.modules.get(name), str(chain[1]), None)
            if kind in _reference_kinds(name) or kind in _reference_kinds(name, chain[1], value):
                return f"{name}.{chain[1]}"
    return None


def _refuse_references(regs, name, siblings=()):
    """(registrations that count, {kind: why not}): a registration counts only
    if the registered callable is defined in the submission's own files, not
    imported or re-exported from gradlab's reference modules; a function kind's
    function that calls the reference for that kind does not count either."""
    from gradlab.contract.kinds import KINDS
    kept, refused, reexported = [], {}, {}
    for reg in regs:
        wraps = reg.kind in KINDS and KINDS[reg.kind].form == "function" and calls_reference(reg.target, reg.kind)
        try:
            held = None if wraps or is_reference_code(reg.target) else holds_reference(reg.target, reg.kind, siblings)
        except Exception:    # gradlab's code broken by a patch made at import: the checks judge the code itself
            held = None
        if held:
            refused[reg.kind] = (f"{name} registers {reg.kind!r} and holds gradlab's own reference code of "
                                 f"{reg.kind!r} ({held}) at its top level: a module of your own that calls it (its "
                                 "methods, its helper functions) cannot be told from your code, so the "
                                 f"registration does not count; compute {reg.kind} in your file, and compare with "
                                 "gradlab's reference from another file (gradlab's other kinds may be imported as "
                                 "parts)")
        elif is_reference_code(reg.target):
            where = getattr(getattr(reg.target, "func", reg.target), "__module__", "gradlab.modules")
            reexported[reg.kind] = (f"{name} registers {reg.kind!r} with gradlab's own reference implementation "
                                    f"({where}), imported or re-exported, not code of its own; gradlab checks "
                                    f"the code you wrote: register a factory defined in your file")
        elif wraps:
            refused[reg.kind] = (f"{name} registers {reg.kind!r} with a function that calls gradlab's own reference "
                                 f"implementation of it ({wraps}), not code of its own; gradlab checks the code you "
                                 f"wrote: compute it in your function")
        else:
            kept.append(reg)
    # the file's own registrations' reasons first (the one said when nothing counts): importing a reference
    # module registers its kinds too (optim.py: sgd, adam, adamw), which the file did not write
    own = set(refused)
    refused.update({k: v for k, v in reexported.items() if k not in refused})
    refused = {k: v for k, v in refused.items() if k not in {r.kind for r in kept}}
    return kept, refused, tuple(k for k in refused if k in own)


def _load_file(path):
    full = os.path.abspath(path)
    _require_file(path)
    _reference_homes()                  # (before the student's code runs: holds_reference reads it after)
    if os.path.isdir(full):
        raise UsageError(f"{path} is a folder; pass the .py file that calls gradlab.register")
    if full in _loading:
        raise UsageError(_self_check_message(path, full))
    digest = hashlib.sha1(os.fsencode(full)).hexdigest()[:10]    # a name's bytes: not all are UTF-8
    mod_name = f"gradlab_impl_{os.path.splitext(os.path.basename(full))[0]}_{digest}"
    spec = importlib.util.spec_from_file_location(mod_name, full)
    if spec is None and full.lower().endswith(".ipynb"):
        raise UsageError(f"{path} is a notebook, and gradlab check imports .py files: in the notebook, run "
                         "gradlab.check(KIND, impl=build) on its registered factory or function, or export it "
                         f"(jupyter nbconvert --to script {path}); gradlab grade reads notebooks as they are")
    if spec is None:
        raise UsageError(f"{path} is not a Python file gradlab can import; give it a .py name")
    folder = os.path.dirname(full)
    package = _package_name(folder)
    if package is not None:             # a package's file: imported as its member, so `from .layers import` works
        mod_name = package if os.path.basename(full) == "__init__.py" else \
            f"{package}.{os.path.splitext(os.path.basename(full))[0]}"
        module = None
    else:
        module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, folder)          # the student's file may import its siblings
    before = set(sys.modules)
    if module is not None:
        sys.modules[mod_name] = module
    _loading.append(full)
    try:
        with collecting() as found:
            if module is None:
                module = guarded(f"importing {path}", _import_member, package, folder, mod_name, files=(full,),
                                 error=UsageError)
            else:
                guarded(f"importing {path}", spec.loader.exec_module, module, files=(full,), error=UsageError)
    except SyntaxError as e:  # raised by compile, before any student frame runs (or by a helper file it imports)
        _forget(mod_name, package, before)
        raise UsageError(f"{_syntax_file(e, path, full)}:{e.lineno}: syntax error: {e.msg}; fix it and run "
                         "again") from None
    except UsageError:
        _forget(mod_name, package, before)
        raise
    finally:
        _loading.remove(full)
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    misnamed = [m for m in found if isinstance(m, Misnamed)]
    found = [r for r in found if not isinstance(r, Misnamed)]
    if not found and not misnamed:
        found = _tagged(module)         # reference modules imported before: their functions keep their tags
        if not any(is_reference_code(r.target) for r in found):
            found = []
    found, refused, own = _refuse_references(found, path, _submission_modules(before, folder))
    refused, own = _set_aside(misnamed, found, refused, own)
    if not found:
        if refused:
            raise UsageError(next(iter(refused.values())))
        raise UsageError(f"{path} registers nothing; decorate its factory with @gradlab.register(\"attention\") "
                         "(or the kind it implements) and `import gradlab` at the top")
    return Implementation(path, _index(found, path, own=mod_name), (full,), refused, own)


def _set_aside(misnamed, kept, refused, own):
    """A registration under a misspelled kind (registry.Misnamed) refuses the kind it meant, with its message,
    unless the file registers that kind as well: the file's other kinds are checked (or graded) as usual, and
    `gradlab check KIND` on the kind it meant says the message (exit 2)."""
    registered = {r.kind for r in kept}
    extra = {m.kind: m.message for m in misnamed if m.kind not in registered and m.kind not in refused}
    return {**refused, **extra}, tuple(own) + tuple(extra)


def _package_name(folder):
    """The name gradlab imports a folder holding __init__.py under (a package whose files import each other
    relatively), one per folder; None for a plain folder. The folder's own name may be no identifier (a
    student's "José García"), so the name is made from its path."""
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return None
    return f"gradlab_pkg_{hashlib.sha1(os.fsencode(folder)).hexdigest()[:10]}"


def _import_member(package, folder, name):
    """Import `name` (the package itself, or one of its files) as Python imports a package's module: the
    package's __init__.py first, then the file, with `__package__` set for its relative imports. Each load
    runs them again, as a plain file's does (a second gradlab.check in one session found no registration in
    the module Python kept)."""
    for other in _package_modules(package):
        del sys.modules[other]
    spec = importlib.util.spec_from_file_location(package, os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    module = importlib.util.module_from_spec(spec)
    sys.modules[package] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(package, None)
        raise
    return importlib.import_module(name)


def _forget(name, package, before):
    """A failed import leaves nothing behind: the module, and the package and members it brought in."""
    sys.modules.pop(name, None)
    if package is not None:
        for other in _package_modules(package):
            if other not in before:
                del sys.modules[other]


def _package_modules(package):
    """The names in sys.modules of the package and its members."""
    return [n for n in sys.modules if n == package or n.startswith(package + ".")]


def _syntax_file(error, path, full):
    """The file a SyntaxError is in, as the user would name it: `path` itself, or a helper file it imports
    (its name beside path's folder). It was always `path`: a syntax error in helpers.py at line 3 sent the
    student to line 3 of main.py."""
    where = getattr(error, "filename", None)
    if not isinstance(where, str) or not where or os.path.abspath(where) == full:
        return path
    return os.path.join(os.path.dirname(path), os.path.relpath(os.path.abspath(where), os.path.dirname(full)))


_loading = []   # files being imported right now


def _self_check_message(path, full):
    """A file that calls gradlab.check on itself at import would load itself forever."""
    frame, line = sys._getframe(), None
    while frame is not None:
        if os.path.abspath(frame.f_code.co_filename) == full:
            line = frame.f_lineno
        frame = frame.f_back
    where = f"{os.path.basename(full)}:{line}" if line else path
    return (f"{where} runs gradlab.check on its own file while being imported, which would import it again "
            "without end; put that call under `if __name__ == \"__main__\":`")


def _load_module_name(name):
    # guarded turns every import error into a UsageError, so look the name up
    # first: "no such module" is the user's typo, not an error inside the module.
    try:
        missing = importlib.util.find_spec(name) is None
    except (ImportError, ValueError):   # a parent package that is missing, or a name like "a..b"
        missing = True
    if missing:
        if os.path.isfile(f"{name}.py"):
            raise UsageError(f"no such module: {name}; did you mean the file {name}.py? (--impl {name}.py)")
        raise UsageError(f"no such file or module: {name} (give a path to a .py file, "
                         "or the name of a module importable from here)")
    with collecting() as found:
        module = guarded(f"importing {name}", importlib.import_module, name, error=UsageError)
    misnamed = [m for m in found if isinstance(m, Misnamed)]
    regs = [r for r in found if not isinstance(r, Misnamed)] or ([] if misnamed else _tagged(module))
    if name == "gradlab.modules" or name.startswith("gradlab.modules."):
        refused, own = {}, ()           # gradlab's reference itself, asked for by name
    else:
        regs, refused, own = _refuse_references(regs, name)
    refused, own = _set_aside(misnamed, regs, refused, own)
    if not regs:
        if refused:
            raise UsageError(next(iter(refused.values())))
        raise UsageError(f"module {name} registers nothing; decorate its factory with @gradlab.register(KIND)")
    files = (getattr(module, "__file__", None),)
    return Implementation(name, _index(regs, name), tuple(f for f in files if f), refused, own)


def _source_file(fn):
    """(file,) where a callable impl is defined, so errors point at its lines
    rather than at the innermost library frame; () when unknown."""
    try:
        return (os.path.abspath(inspect.getsourcefile(fn)),)
    except TypeError:
        return ()


def _tagged(module):
    regs = []
    for value in vars(module).values():
        regs.extend(getattr(value, "__gradlab__", ()) if callable(value) else ())
    return regs


def _index(regs, name, own=None):
    """kind -> Registration. `own` is the module name of the loaded file: when
    it and a sibling it imports (a variant importing the original, say) both
    register a kind, the file's own registration wins."""
    by_kind = {}
    for reg in regs:
        if reg.kind in by_kind and own is not None:
            mine = [r for r in (by_kind[reg.kind], reg) if getattr(r.target, "__module__", None) == own]
            if len(mine) == 1:
                by_kind[reg.kind] = mine[0]
                continue
        if reg.kind in by_kind and by_kind[reg.kind].target is not reg.target:
            raise UsageError(f"{name} registers {reg.kind!r} twice ({by_kind[reg.kind].where} and {reg.where}); "
                             "keep one")
        by_kind[reg.kind] = reg
    return by_kind


def registration_for(impl, kind, loaded=None):
    """The Registration to check for `kind`: a bare unregistered callable is
    taken as implementing `kind` itself."""
    loaded = load(impl) if loaded is None else loaded
    if callable(impl) and not loaded.registrations:
        return loaded, Registration(kind, impl, None, getattr(impl, "__qualname__", "?"))
    return loaded, loaded.get(kind)


__all__ = ["Implementation", "load", "open_implementation", "reference", "registration_for", "student_frame",
           "wants_worker"]
