# cudafrag run --blocks puts this directory first on PYTHONPATH. CuPy has no
# environment variable that turns its memory pools off; its documented way is
# cupy.cuda.set_allocator(None) and cupy.cuda.set_pinned_memory_allocator(None),
# called by the program. This module makes that call right after `import cupy`
# finishes, so every CuPy array becomes an allocation of its own that cudafrag
# sees (and its arena serves). It does nothing else: no other module is touched,
# and the sitecustomize module this one shadows (if any) still runs.
import sys


def _say(text):
    try:
        sys.stderr.write("cudafrag: " + text + "\n")
    except Exception:
        pass


def _pools_off(cupy):
    try:
        # No argument: the raw allocator in every CuPy version (the default
        # became None, meaning "no pool", in v7).
        cupy.cuda.set_allocator()
        cupy.cuda.set_pinned_memory_allocator()
    except Exception as e:  # the program must run on, pools or not
        _say("could not turn CuPy's memory pools off (%s: %s); CuPy's allocations are "
             "its pool's segments" % (type(e).__name__, e))
        return
    _say("CuPy's memory pools are off (cudafrag run --blocks): each array is one allocation")


class _AfterCupyImport:
    """A meta path finder that only wraps the loader of the top-level `cupy`
    package, once, so its pools are turned off as soon as it is imported."""

    def find_spec(self, name, path=None, target=None):
        if name != "cupy":
            return None
        import importlib.util

        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        try:
            # The other finders, as the import would have asked them.
            spec = importlib.util.find_spec(name)
            if spec is None:  # no CuPy here: the import fails as it would have
                return None
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                _pools_off(module)

            spec.loader.exec_module = exec_module
            return spec
        except Exception as e:  # the import goes on without the hook
            _say("could not hook `import cupy` (%s: %s); CuPy's pools stay on: call "
                 "cupy.cuda.set_allocator(None) in the program" % (type(e).__name__, e))
            return None


def _chain_shadowed_sitecustomize():
    import importlib.machinery
    import importlib.util
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if "cupy" in sys.modules:
    _pools_off(sys.modules["cupy"])
else:
    sys.meta_path.insert(0, _AfterCupyImport())
try:
    _chain_shadowed_sitecustomize()
except Exception as e:
    _say("the sitecustomize module on the rest of the path failed: %s: %s" % (type(e).__name__, e))
