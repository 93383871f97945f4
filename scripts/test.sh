#!/usr/bin/env bash
# Install what is missing, then run the tests.
#   scripts/test.sh            the whole suite, slow and integration tests included, then the UI
#                              suites against Neo4j (what CI runs)
#   scripts/test.sh --quick    the fast tier: -m "not slow and not integration" (about 2 minutes
#                              on a 2-core machine; no MPI programs, browser or Bolt server)
# Other arguments go to pytest (e.g. scripts/test.sh --quick tests/test_engine.py -x).
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
quick=0
for arg in "$@"; do
  if [ "$arg" = "--quick" ]; then quick=1; else args+=("$arg"); fi
done
bash scripts/setup.sh
if [ "$quick" = 1 ]; then
  args=(-m "not slow and not integration" "${args[@]}")
fi
# Style first (seconds): ruff's lint and format rules, as configured in pyproject.toml.
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check --quiet .
if [ "$quick" = 1 ] || [ "${#args[@]}" -gt 0 ]; then
  exec .venv/bin/python -m pytest -q -p no:cacheprovider "${args[@]}"
fi
.venv/bin/python -m pytest -q -p no:cacheprovider
# The UI suites again, against the session's Neo4j server instead of the embedded store
# (skipped with one line where the server cannot be built): the pages, stored analyses, jobs,
# Compare and the browser walk behave the same on both backends.
LLAMP_TEST_UI_STORE=neo4j exec .venv/bin/python -m pytest -q -p no:cacheprovider \
  tests/test_ui_stored.py tests/test_ui_region.py tests/test_ui_apptest.py \
  tests/test_compare_page.py tests/test_ui_browser.py tests/test_ui_tasks.py
