"""The %%cudafrag magic, for api.sh, with a stand-in for IPython (its display
and a shell that registers magics), so that it runs where IPython is not
installed: the cell runs under cudafrag in a subprocess on the simulated device
and the HTML report is displayed, framed. Usage: magic.py STUB_DIR"""
import os
import sys

stub = os.path.join(sys.argv[1], "IPython")
os.makedirs(stub, exist_ok=True)
with open(os.path.join(stub, "__init__.py"), "w") as f:
    f.write("")
with open(os.path.join(stub, "display.py"), "w") as f:
    f.write("shown = []\n"
            "class HTML:\n    def __init__(self, data): self.data = data\n"
            "def display(obj): shown.append(obj)\n")
sys.path.insert(0, sys.argv[1])

import IPython.display  # noqa: E402  the stand-in

import cudafrag.ipython  # noqa: E402


class Shell:
    magics = {}
    execution_count = 1

    def register_magic_function(self, fn, magic_kind, magic_name):
        assert magic_kind == "cell"
        self.magics[magic_name] = fn


shell = Shell()
cudafrag.ipython.load_ipython_extension(shell)
cell = """
import ctypes
rt = ctypes.CDLL("libcudart.so.13")
p = ctypes.c_void_p()
assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(5 << 20)) == 0
print("cell ran")
"""
shell.magics["cudafrag"]("--sim --height 300", cell)
assert len(IPython.display.shown) == 1, IPython.display.shown
page = IPython.display.shown[0].data
assert page.startswith('<iframe srcdoc="') and "height:300px" in page, page[:200]
assert "&lt;html" in page.lower() or "&lt;!doctype html" in page.lower(), page[:300]
assert "cudaMalloc" in page, "the report does not name the cell's allocation"
print("ok: the magic displayed the report")
