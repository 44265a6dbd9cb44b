#!/usr/bin/env bash
# Real interop check against n8n 2.41.1: the checks that lived here now run in the test suite
# (tests/live_n8n). This installs n8n once (scripts/n8n_peer.py install; ~7 min and 2.8 GB cold) and
# runs them with a missing n8n counted as a failure.
#
#   scripts/n8n-interop.sh [pytest args...]
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
cd "$REPO"
"$PYTHON" scripts/n8n_peer.py install
LIVE_N8N_REQUIRED=1 exec "$PYTHON" -m pytest tests/live_n8n -q "$@"
