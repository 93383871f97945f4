"""Build ``llamp._kernels``: every declared kernel signature compiled ahead of time.

Run by ``setup.py`` at install (``python llamp/kernel_build.py OUTPUT``) with only the build
requirements present (numpy, numba, blake3): the packages of the source tree are set up as
bare namespaces, so importing a kernel module runs that module and what it imports, not the
packages' ``__init__`` files (which reach pandas, OR-Tools and the rest). Each signature of a
:func:`llamp.kernel.kernel` is compiled with numba's ahead-of-time compiler (``numba.pycc``)
for this machine's CPU, with the kernel's own options (``nogil`` releases the GIL, as the
JIT's does; ``fastmath`` flags); kernels it calls are compiled into it. The module also
exports ``manifest()``: which export serves which kernel and signature, the source files the
kernels were built from and their digest (:func:`llamp.kernel.source_digest`).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import os
import sys
import time
import tomllib
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _namespaces(root: Path) -> None:
    """The packages of ``pyproject.toml``'s ``package-dir`` as bare modules over their folders."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    for name, folder in sorted(config["tool"]["setuptools"]["package-dir"].items()):
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(root / folder)]
        module = types.ModuleType(name)
        module.__spec__ = spec
        module.__path__ = spec.submodule_search_locations
        sys.modules[name] = module


def _numba_types(signature: str) -> tuple:
    from numba.core import types as nt

    from llamp.kernel import _split

    return tuple(eval(token, {}, dict(vars(nt))) for token in _split(signature))  # noqa: S307


def build(output: Path) -> None:
    """Compile every kernel signature of :data:`llamp.kernel.MODULES` into ``output``."""
    os.environ["LLAMP_KERNEL_BUILD"] = "1"
    _namespaces(ROOT)
    import llvmlite.binding as llvm
    from numba.core import cpu
    from numba.pycc import CC
    from numba.pycc import compiler as pycc_compiler

    from llamp import kernel

    for name in kernel.MODULES:
        importlib.import_module(name)
    cc = CC(kernel.EXTENSION.rpartition(".")[2])
    cc.output_dir = str(output.parent)
    cc.output_file = output.name
    cc.target_cpu = llvm.get_host_cpu_name()
    options: dict[object, dict] = {}
    table: dict[str, list[tuple[str, str]]] = {}
    count = 0
    for key, k in sorted(kernel.registered().items()):
        if k.py_func.__module__ not in kernel.MODULES or not k.signatures:
            continue
        dispatcher = k.dispatcher()
        for i, signature in enumerate(k.signatures):
            argtypes = _numba_types(signature)
            dispatcher.compile(argtypes)
            restype = dispatcher.overloads[argtypes].signature.return_type
            export = f"{key.removeprefix('llamp.').replace('.', '_')}__{i}"
            cc.export(export, restype(*argtypes))(dispatcher.py_func)
            options[dispatcher.py_func] = k.options
            table.setdefault(key, []).append((export, signature))
            count += 1
    files = sorted(
        name
        for name, module in sys.modules.items()
        if (name == "llamp" or name.startswith("llamp.")) and getattr(module, "__file__", None)
    )
    manifest = json.dumps(
        {"digest": kernel.source_digest(files), "files": files, "kernels": table},
        sort_keys=True,
    )
    scope: dict = {}
    exec(f"def manifest():\n    return {manifest!r}\n", scope)  # noqa: S102 - a str constant
    cc.export("manifest", "unicode_type()")(scope["manifest"])

    real = pycc_compiler.compile_extra

    def compile_extra(typingctx, targetctx, func, args, return_type, flags, locals, **kw):
        """numba.pycc's compilation with the kernel's own options (pycc has one set for all)."""
        opts = options.get(func, {})
        flags = flags.copy()
        if opts.get("nogil"):
            flags.release_gil = True
        if opts.get("fastmath"):
            flags.fastmath = cpu.FastMathOptions(opts["fastmath"])
        return real(typingctx, targetctx, func, args, return_type, flags, locals, **kw)

    pycc_compiler.compile_extra = compile_extra
    start = time.perf_counter()
    cc.compile()
    print(
        f"{output.name}: {count} signatures of {len(table)} kernels compiled for "
        f"{cc.target_cpu} in {time.perf_counter() - start:.0f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python llamp/kernel_build.py OUTPUT.so")
    build(Path(sys.argv[1]).resolve())
