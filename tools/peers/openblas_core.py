#!/usr/bin/env python3
"""Which kernels OpenBLAS (and so PyTorch's matmul, which calls it) runs in this environment.

OpenBLAS picks its kernels once, when it is loaded, from the CPU model, unless
OPENBLAS_CORETYPE names them. Some machines set that variable (with OPENBLAS_L2_SIZE) for
every process, because older OpenBLAS builds compute wrong results or crash on their
processor; the project's Zen 5 machines set "Haswell", AVX2 kernels that run at about half
the speed of the AVX-512 "Cooperlake" ones OpenBLAS picks there by itself (PyTorch's 1024 x
1024 matmul on 2 threads: 242 against 438 GFLOP/s). Tests and CI keep the environment as it
is; a measurement against OpenBLAS or PyTorch says which kernels it ran, and is made with
both variables unset in that command alone where the default kernels compute correctly
(docs/results say where that was checked):

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 tools/peers/compare_simplenet.py ...

    python3 tools/peers/openblas_core.py     the kernels OpenBLAS runs with this environment
"""
from __future__ import annotations

import subprocess
import sys

# libblas.so.3 is the BLAS that PyTorch and numpy load (Debian's alternatives pick the
# implementation); only OpenBLAS has openblas_get_corename.
_PROBE = ("import ctypes\n"
          "try:\n"
          "    lib = ctypes.CDLL('libblas.so.3')\n"
          "except OSError:\n"
          "    print('no BLAS')\n"
          "else:\n"
          "    if hasattr(lib, 'openblas_get_corename'):\n"
          "        lib.openblas_get_corename.restype = ctypes.c_char_p\n"
          "        print(lib.openblas_get_corename().decode())\n"
          "    else:\n"
          "        print('not OpenBLAS')\n")


def chosen_core(env: dict[str, str] | None = None) -> str:
    """The kernels ("Haswell", "Cooperlake", ...) OpenBLAS picks when loaded with @p env
    (os.environ by default) as the system's BLAS, asked in a fresh process since it decides
    once, at load time; "not OpenBLAS" or "no BLAS" where the system's BLAS is another or
    missing."""
    p = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env)
    return p.stdout.strip() or "no BLAS"


if __name__ == "__main__":
    print(chosen_core())
