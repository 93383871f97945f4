"""The Docker set-up, checked statically (no Docker here): every path the Dockerfile and the
compose file use exists in the repository, the stages compose builds exist, and the build
context leaves out what must not be sent to the daemon (``.venv``, ``.git``, the store)."""

from __future__ import annotations

import fnmatch
import re
import shlex
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
DOCKER = REPO / "docker"
DOCKERFILE = DOCKER / "Dockerfile"
COMPOSE = DOCKER / "compose.yaml"


def _instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in dockerfile.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def _copy_sources(dockerfile: Path) -> list[str]:
    """Sources of every COPY/ADD from the build context (not ``--from=stage``)."""
    sources = []
    for word, args in _instructions(dockerfile):
        if word not in ("COPY", "ADD"):
            continue
        parts = shlex.split(args)
        if any(p.startswith("--from") for p in parts):
            continue
        paths = [p for p in parts if not p.startswith("--")]
        sources += paths[:-1]  # the last one is the destination
    return sources


def _stages(dockerfile: Path) -> list[str]:
    return [
        args.split()[-1]
        for word, args in _instructions(dockerfile)
        if word == "FROM" and " AS " in f" {args.upper()} "
    ]


def _compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _dockerignore() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]


def _ignored(path: str, patterns: list[str]) -> bool:
    return any(
        fnmatch.fnmatch(path, p) or fnmatch.fnmatch(path, p.removeprefix("**/")) for p in patterns
    )


def test_dockerfile_parses_into_copies_and_stages():
    sources = _copy_sources(DOCKERFILE)
    assert {"pyproject.toml", "llamp", "ingest", "lp", "graphdb", "ui", "injector"} <= set(sources)
    assert _stages(DOCKERFILE) == ["app", "full"]


@pytest.mark.parametrize("source", _copy_sources(DOCKERFILE))
def test_every_copy_source_exists_in_the_repository(source):
    """COPY sources are relative to the build context, the repository root (compose: ``..``)."""
    assert (REPO / source).exists(), (
        f"docker/Dockerfile copies {source}, which the repository lacks"
    )


def test_every_package_directory_is_copied_before_pip_install():
    """``pip install .`` builds every package of pyproject's ``package-dir``: a directory not
    copied by then fails the image's build ("package directory 'study' does not exist")."""
    import tomllib

    package_dirs = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
            "package-dir"
        ].values()
    )
    copied: set[str] = set()
    for word, args in _instructions(DOCKERFILE):
        if word in ("COPY", "ADD"):
            copied |= {p.rstrip("/") for p in shlex.split(args)[:-1] if not p.startswith("--")}
        elif word == "RUN" and "pip install" in args:
            break
    assert package_dirs - copied == set(), "copied after pip install, or not at all"


def test_no_copy_source_is_excluded_by_dockerignore():
    patterns = _dockerignore()
    excluded = [s for s in _copy_sources(DOCKERFILE) if _ignored(s, patterns)]
    assert excluded == []


def test_dockerignore_keeps_local_state_out_of_the_context():
    patterns = _dockerignore()
    for path in (".venv", ".git", ".llamp", ".pytest_cache", ".hypothesis", "lp/__pycache__"):
        assert _ignored(path, patterns), f"{path} would be sent to the Docker daemon"


def test_full_stage_has_open_mpi_and_compilers():
    """``llamp trace``/``inject``/``validate`` build C code with mpicc and run mpirun."""
    runs = []
    stage = None
    for word, args in _instructions(DOCKERFILE):
        if word == "FROM":
            stage = args.split()[-1]
        elif word == "RUN" and stage == "full":
            runs.append(args)
    installed = " ".join(runs).split()
    for package in ("openmpi-bin", "libopenmpi-dev", "gcc", "gfortran"):
        assert package in installed


def test_compose_builds_the_app_from_the_repository_with_neo4j_5():
    compose = _compose()
    services = compose["services"]
    assert services["neo4j"]["image"].startswith("neo4j:5")
    # the Neo4j the tests start (graphdb/neo4j_server) is the version compose runs
    pom = (REPO / "graphdb" / "neo4j_server" / "pom.xml").read_text()
    tested = re.search(r"<neo4j.version>([^<]+)</neo4j.version>", pom).group(1)
    assert services["neo4j"]["image"] == f"neo4j:{tested}-community"
    build = services["app"]["build"]
    context = (COMPOSE.parent / build["context"]).resolve()
    assert context == REPO
    assert (context / build["dockerfile"]).resolve() == DOCKERFILE
    assert build["target"] in _stages(DOCKERFILE)
    assert "neo4j" in services["app"]["depends_on"]
    assert services["app"]["environment"]["LLAMP_STORE"].startswith("bolt://neo4j:")


def test_every_path_compose_names_exists():
    """Bind mounts and env files are relative to the compose file; named volumes are declared."""
    compose = _compose()
    declared = set(compose.get("volumes") or {})
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = (volume if isinstance(volume, str) else volume["source"]).split(":")[0]
            if source.startswith((".", "/", "~")):
                assert (COMPOSE.parent / source).exists(), f"{name}: bind mount {source} missing"
            else:
                assert source in declared, f"{name}: volume {source} not declared"
        env_files = service.get("env_file", [])
        for env_file in [env_files] if isinstance(env_files, str) else env_files:
            assert (COMPOSE.parent / env_file).exists(), f"{name}: env_file {env_file} missing"


def test_compose_up_needs_no_variables():
    """``docker compose -f docker/compose.yaml up`` works as is: every ``${VAR}`` has a default."""
    text = COMPOSE.read_text()
    assert "${NEO4J_PASSWORD:?" not in text
    assert ":?" not in text
