"""Imports flow one way (docs/architecture.md §Packages): the core ← ingest ← lp ←
graphdb / injector / study ← cli / ui.

An AST check over every module of the distribution: a module may import its own package, the
core and the packages of lower layers, never one of a higher layer; within a layer only the
edges listed in :data:`PEER_EDGES` (each with its reason). Imports inside functions (lazy
imports) count as much as those at the top. A failure names ``file:line``, the import and the
rule it breaks. A second check catches imports of ``llamp`` modules that do not exist (a module
moved on one branch and still imported under its old name on another).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: Folder of each importable package (pyproject.toml's ``[tool.setuptools] package-dir``).
PACKAGE_DIRS = {
    "llamp": REPO / "llamp",
    "llamp.ingest": REPO / "ingest",
    "llamp.lp": REPO / "lp",
    "llamp.graphdb": REPO / "graphdb",
    "llamp.injector": REPO / "injector",
    "llamp.study": REPO / "study",
    "llamp.ui": REPO / "ui",
}

#: The layer of every package, lowest first. ``core`` is the top-level modules of ``llamp/``
#: (config, errors, graph, params); ``cli`` is ``llamp/cli/`` and ``llamp/__main__.py``.
LAYERS: dict[str, int] = {
    "core": 0,
    "ingest": 1,
    "lp": 2,
    "graphdb": 3,
    "injector": 3,
    "study": 3,
    "cli": 4,
    "ui": 4,
}

#: The imports allowed between two packages of one layer, and why.
PEER_EDGES: dict[tuple[str, str], str] = {
    ("injector", "graphdb"): "a validation stores its run and result in the graph store",
    ("study", "graphdb"): "a study stores its runs and results in the graph store",
    ("study", "injector"): "a study's networks may name calibrated profiles",
    ("cli", "ui"): "`llamp ui` serves the Streamlit app (llamp.ui.APP_PATH)",
}

#: (file, imported module) pairs allowed although they break a rule: none.
KNOWN_EXCEPTIONS: set[tuple[str, str]] = set()


def _modules() -> list[tuple[Path, str]]:
    """Every ``.py`` file of the distribution and its dotted module name."""
    found = []
    for package, folder in PACKAGE_DIRS.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("").parts
            parts = [*package.split("."), *rel]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append((path, ".".join(parts)))
    return found


def layer_of(module: str) -> str | None:
    """The package (a key of :data:`LAYERS`) of a dotted ``llamp`` module, else ``None``."""
    parts = module.split(".")
    if parts[0] != "llamp":
        return None
    if len(parts) == 1:
        return "core"
    if parts[1] == "__main__":
        return "cli"
    if parts[1] in LAYERS and parts[1] != "core":
        return parts[1]
    return "core"


def imports_of(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in ``path``, wherever it is in the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((node.lineno, target))
            # ``from llamp import ui`` imports the package ``llamp.ui``
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                if layer_of(candidate) not in (None, layer_of(target)):
                    out.append((node.lineno, candidate))
    return out


def violations() -> list[str]:
    """One line per import that breaks the layering: ``file:line: a imports b (rule)``."""
    found = []
    for path, module in _modules():
        source = layer_of(module)
        for line, target in imports_of(path, module):
            dest = layer_of(target)
            if dest is None or dest == source:
                continue
            rel = path.relative_to(REPO).as_posix()
            if (rel, target) in KNOWN_EXCEPTIONS:
                continue
            where = f"{rel}:{line}: {module} ({source}) imports {target} ({dest})"
            if LAYERS[dest] > LAYERS[source]:
                found.append(
                    f"{where}: upward import, layer {LAYERS[source]} may not import layer "
                    f"{LAYERS[dest]} (core ← ingest ← lp ← graphdb/injector/study ← cli/ui; "
                    "move the shared code down to the lower package or the core)"
                )
            elif LAYERS[dest] == LAYERS[source] and (source, dest) not in PEER_EDGES:
                found.append(
                    f"{where}: {source} and {dest} are peers (layer {LAYERS[source]}) and this "
                    "edge is not in PEER_EDGES"
                )
    return found


def test_every_package_has_a_layer():
    for package in PACKAGE_DIRS:
        assert layer_of(package) in LAYERS, package
    assert layer_of("llamp.cli.base") == "cli" and layer_of("llamp.config") == "core"
    assert all(LAYERS[a] == LAYERS[b] for a, b in PEER_EDGES)


def test_imports_flow_one_way():
    found = violations()
    assert not found, "imports against the layering:\n" + "\n".join(found)


def test_known_exceptions_are_still_needed():
    """An exception that no longer matches any import is removed, not kept as a loophole."""
    used = set()
    for path, module in _modules():
        rel = path.relative_to(REPO).as_posix()
        used |= {(rel, target) for _, target in imports_of(path, module)}
    assert KNOWN_EXCEPTIONS <= used, KNOWN_EXCEPTIONS - used


def _exists(module: str) -> bool:
    parts = module.split(".")
    for depth in range(len(parts), 0, -1):
        package = ".".join(parts[:depth])
        if package in PACKAGE_DIRS:
            folder = PACKAGE_DIRS[package].joinpath(*parts[depth:])
            return folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file()
    return False


def test_every_llamp_import_names_a_module():
    """``from llamp.lp.collective_models import …`` after the module moved to ingest fails here
    with its file and line, not as an ImportError in whichever test imports it first."""
    missing = []
    for path, _module in _modules() + [(p, "tests") for p in sorted((REPO / "tests").glob("*.py"))]:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] == "llamp" and not _exists(name):
                    missing.append(f"{path.relative_to(REPO)}:{node.lineno}: no module {name}")
    assert not missing, "\n".join(missing)


def test_no_two_modules_share_a_name():
    """A module's name says what it holds, once: ``store.py`` in two packages, or a UI module
    named as a study module, makes a reader (and a traceback) guess which one. The page scripts
    of ``ui/views/`` are named for their page, not imported, and are not counted."""
    by_name: dict[str, list[str]] = {}
    for path, module in _modules():
        if path.name in ("__init__.py", "__main__.py") or path.parent.name == "views":
            continue
        by_name.setdefault(path.stem, []).append(module)
    shared = {name: modules for name, modules in by_name.items() if len(modules) > 1}
    assert not shared, shared


@pytest.mark.parametrize(
    ("source", "code", "expected"),
    [
        ("ingest/x.py", "from llamp.lp.model import solve\n", "upward import, layer 1"),
        ("lp/x.py", "def f():\n    from llamp.cli.base import table\n", "upward import, layer 2"),
        ("graphdb/x.py", "import llamp.study.run\n", "not in PEER_EDGES"),
        ("llamp/config.py", "from llamp import ui\n", "upward import, layer 0"),
    ],
)
def test_the_check_catches(tmp_path, monkeypatch, source, code, expected):
    """The rule fires on a module-level, a lazy and a ``from llamp import pkg`` import."""
    folder = tmp_path / source.split("/")[0]
    folder.mkdir()
    (folder / source.split("/")[1]).write_text(code)
    package = next(p for p, d in PACKAGE_DIRS.items() if d.name == folder.name)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE_DIRS", {package: folder})
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    found = violations()
    assert len(found) == 1 and expected in found[0], found
    assert found[0].startswith(f"{source}:{code.count(chr(10))}:")
