#!/usr/bin/env bash
# Install everything llamp needs on a fresh Debian (12+) machine, idempotently:
# Debian packages (Python, compilers, Java and Maven), a virtual environment in .venv with llamp
# and its test tools, and the local Neo4j server the tests start (graphdb/neo4j_server, built
# with Maven from Maven Central). Re-running it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# chromium + chromium-driver: the UI's end-to-end browser test (Selenium drives the system browser).
# Open MPI (default mpicc/mpirun), MPICH and gfortran: the PMPI tracer and the latency injector;
# lammps and hpcc: real applications traced end to end in the tests.
# openjdk-17-jre-headless + maven: Neo4j Community, which the graph-store tests start.
apt_packages=(python3 python3-venv python3-dev python3-pip build-essential git ca-certificates
              chromium chromium-driver
              openmpi-bin libopenmpi-dev gfortran mpich libmpich-dev lammps hpcc
              openjdk-17-jdk-headless maven)
missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "[setup] installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] < (3, 13) else 1)'; then
  echo "[setup] llamp needs Python 3.11 or 3.12; $("$PYTHON" --version 2>&1) found" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.llamp-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ scripts/setup.sh -nt "$stamp" ]; then
  echo "[setup] installing llamp and its dependencies into .venv (a few minutes the first time)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test]"
  touch "$stamp"
fi

# Neo4j Community (the version docker/compose.yaml runs) for the Neo4j backend's tests: Maven
# resolves it from Maven Central into ~/.m2 once and compiles the one-class launcher.
neo4j=graphdb/neo4j_server
if [ ! -f "$neo4j/target/classpath.txt" ] || [ "$neo4j/pom.xml" -nt "$neo4j/target/classpath.txt" ] || \
   [ -n "$(find "$neo4j/src" -newer "$neo4j/target/classpath.txt" -print -quit)" ] || \
   ! .venv/bin/python -c 'import sys; from llamp.graphdb.neo4jserver import launcher_classpath; sys.exit(launcher_classpath() is None)'; then
  echo "[setup] building the local Neo4j server (Maven; a few minutes the first time)"
  if mvn -q -B -f "$neo4j/pom.xml" package > "$neo4j/build.log" 2>&1; then
    touch "$neo4j/target/classpath.txt"  # Maven leaves an unchanged class path file as it was
  else
    rm -f "$neo4j/target/classpath.txt"
    echo "[setup] warning: the local Neo4j server could not be built (is Maven Central reachable? see $neo4j/build.log); the Neo4j tests will be skipped" >&2
  fi
fi
echo "[setup] ready: $(.venv/bin/llamp --version 2>/dev/null || echo llamp)"
