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
from dataclasses import dataclass, field

from gradlab.contract.errors import UsageError
from gradlab.execution.harness import guarded, student_frame
from gradlab.contract.registry import Registration, collecting

REFERENCE = "reference"


@dataclass
class Implementation:
    name: str                                   # what the user passed, for messages and JSON
    registrations: dict = field(default_factory=dict)   # kind -> Registration
    files: tuple = ()                            # student files, to point at their frames

    def get(self, kind):
        try:
            return self.registrations[kind]
        except KeyError:
            have = ", ".join(self.registrations) or "nothing"
            raise UsageError(f"{self.name} registers no {kind!r} module (it registers {have}); "
                             f"add @gradlab.register({kind!r}) above its build(cfg) factory") from None


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
    """gradlab's own modules, registered through the same gradlab.register."""
    global _reference_cache
    if _reference_cache is None:
        from gradlab import modules as package
        regs = []
        for info in pkgutil.iter_modules(package.__path__):
            name = f"{package.__name__}.{info.name}"
            if name in sys.modules:   # imported elsewhere (a student's file may subclass one): its tags
                found = _tagged(sys.modules[name])
            else:
                with collecting() as found:
                    importlib.import_module(name)
            regs.extend(r for r in found if all(r is not seen for seen in regs))
        _reference_cache = Implementation(REFERENCE, _index(regs, REFERENCE))
    return _reference_cache


def _load_file(path):
    full = os.path.abspath(path)
    if not os.path.exists(full):
        raise UsageError(f"no such file: {path}")
    if os.path.isdir(full):
        raise UsageError(f"{path} is a folder; pass the .py file that calls gradlab.register")
    if full in _loading:
        raise UsageError(_self_check_message(path, full))
    digest = hashlib.sha1(full.encode()).hexdigest()[:10]
    mod_name = f"gradlab_impl_{os.path.splitext(os.path.basename(full))[0]}_{digest}"
    spec = importlib.util.spec_from_file_location(mod_name, full)
    if spec is None:
        raise UsageError(f"{path} is not a Python file gradlab can import; give it a .py name")
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(full)
    sys.path.insert(0, folder)          # the student's file may import its siblings
    sys.modules[mod_name] = module
    _loading.append(full)
    try:
        with collecting() as found:
            guarded(f"importing {path}", spec.loader.exec_module, module, files=(full,), error=UsageError)
    except SyntaxError as e:  # raised by compile, before any student frame runs
        sys.modules.pop(mod_name, None)
        raise UsageError(f"{path}:{e.lineno}: syntax error: {e.msg}; fix it and run again") from None
    except UsageError:
        sys.modules.pop(mod_name, None)
        raise
    finally:
        _loading.remove(full)
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    if not found:
        raise UsageError(f"{path} registers nothing; decorate its factory with @gradlab.register(\"attention\") "
                         "(or the kind it implements) and `import gradlab` at the top")
    return Implementation(path, _index(found, path, own=mod_name), (full,))


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
    regs = found or _tagged(module)
    if not regs:
        raise UsageError(f"module {name} registers nothing; decorate its factory with @gradlab.register(KIND)")
    files = (getattr(module, "__file__", None),)
    return Implementation(name, _index(regs, name), tuple(f for f in files if f))


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


def registration_for(impl, kind):
    """The Registration to check for `kind`: a bare unregistered callable is
    taken as implementing `kind` itself."""
    loaded = load(impl)
    if callable(impl) and not loaded.registrations:
        return loaded, Registration(kind, impl, None, getattr(impl, "__qualname__", "?"))
    return loaded, loaded.get(kind)


__all__ = ["Implementation", "load", "reference", "registration_for", "student_frame"]
