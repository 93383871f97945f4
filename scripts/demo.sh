#!/usr/bin/env bash
# Install everything, then the main job on the embedded store: ingest the real Sweep3D trace
# shipped in tests/data, analyse it (prediction, sweep, critical latencies, tolerance,
# critical path) and start the web UI on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export LLAMP_HOME="${LLAMP_HOME:-$PWD/.llamp}"
LLAMP=.venv/bin/llamp
TRACE=tests/data/traces/liballprof/sweep3d-2x2
echo
echo "== llamp ingest $TRACE --name sweep3d"
$LLAMP ingest "$TRACE" --name sweep3d --replace
echo
echo "== llamp report sweep3d"
$LLAMP report sweep3d
if [ "${LLAMP_DEMO_NO_UI:-}" = "1" ] || [ ! -t 1 ]; then
  echo
  echo "Start the web UI on this store with:  LLAMP_HOME=$LLAMP_HOME $LLAMP ui"
else
  echo
  echo "== llamp ui   (Ctrl-C to stop)"
  exec $LLAMP ui
fi
