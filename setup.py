"""The install's one build step: llamp's kernels compiled ahead of time (``llamp._kernels``).

Everything else is declared in ``pyproject.toml``. The extension is built by
``llamp/kernel_build.py`` (numba's ahead-of-time compiler, run in a child process with the
build requirements); without it llamp runs every kernel under numba's JIT
(:mod:`llamp.kernel`); a failed build fails the install (a C compiler is needed: gcc from
``build-essential``, which ``scripts/setup.sh`` installs).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class BuildKernels(build_ext):
    """``build_ext`` for the kernels: ``kernel_build.py`` writes the module itself."""

    def build_extension(self, ext: Extension) -> None:
        output = Path(self.get_ext_fullpath(ext.name)).resolve()
        output.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, str(ROOT / "llamp" / "kernel_build.py"), str(output)]
        if subprocess.run(command, cwd=ROOT, check=False).returncode != 0:
            raise SystemExit("llamp: error: compiling the kernels ahead of time failed (above)")


setup(
    ext_modules=[Extension("llamp._kernels", sources=[])],
    cmdclass={"build_ext": BuildKernels},
)
