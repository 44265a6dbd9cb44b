#!/usr/bin/env bash
# Model text never drives the terminal (issue 31 item 1), tried in a real terminal (tmux with
# set-clipboard on): the model (tests.support.openai_server) answers with an OSC 52 clipboard
# write (ESC]52;c;cHduZWQ= BEL: "pwned"), a screen wipe (ESC[2J) and a window title
# (ESC]0;title BEL). After the answer the tmux paste buffers and the pane title must be
# unchanged, the conversation still on screen, and the sequences shown as text (␛]52;...).
# Two ways: the embedded agent, and the app on `instance-ai serve` by --url.
# Usage: scripts/tmux_hostile.sh [width height]   (default 140 40). Exit code 0: both passed.
set -u
W=${1:-140}; H=${2:-40}
PY=${PY:-python}
APP=${APP:-instance-ai}
WORK=$(mktemp -d /tmp/tmux-hostile.XXXX)
SOCK="hostile-$$"
T="tmux -L $SOCK"
# the answer, as JSON (escapes written out so this file holds no control character)
cat > "$WORK/script.json" <<'JSON'
[{"respond": {"text": "Here you go: \u001b]52;c;cHduZWQ=\u0007 and \u001b[2J and \u001b]0;title\u0007 done."}}]
JSON
"$PY" -m tests.support.openai_server --port 0 --script "$WORK/script.json" > "$WORK/llm.out" 2> "$WORK/llm.err" &
LLM=$!
SERVE=""
cleanup() {
  $T kill-server 2>/dev/null
  kill "$LLM" 2>/dev/null
  [ -n "$SERVE" ] && kill "$SERVE" 2>/dev/null
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s "$WORK/llm.out" ] && break; sleep 0.1; done
BASE=$("$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["base_url"])' "$WORK/llm.out")
echo "model server: $BASE   work: $WORK"

$T -f /dev/null new-session -d -s setup -x "$W" -y "$H" "sleep 600"
$T set-option -g set-clipboard on
$T set-option -g allow-passthrough off 2>/dev/null

fail=0
check() {  # $1: name of the way, $2: command line of the app
  local name=$1 cmd=$2
  $T new-session -d -s "$name" -x "$W" -y "$H" \
    "OPENAI_BASE_URL=$BASE OPENAI_API_KEY=x XDG_CONFIG_HOME=$WORK/config-$name XDG_DATA_HOME=$WORK/data-$name $cmd"
  local pane="$name:0.0"
  sleep 1
  local title_before buffers_before
  title_before=$($T display-message -p -t "$pane" '#{pane_title}')
  buffers_before=$($T list-buffers 2>/dev/null | wc -l)
  for _ in $(seq 150); do $T capture-pane -p -t "$pane" | grep -q "Message" && break; sleep 0.2; done
  $T send-keys -t "$pane" "hello there" Enter
  local screen=""
  for _ in $(seq 150); do
    screen=$($T capture-pane -p -t "$pane")
    echo "$screen" | grep -q "done\." && break
    sleep 0.2
  done
  sleep 1
  screen=$($T capture-pane -p -t "$pane")
  local title_after buffers_after
  title_after=$($T display-message -p -t "$pane" '#{pane_title}')
  buffers_after=$($T list-buffers 2>/dev/null | wc -l)
  echo "== $name: pane title before [$title_before] after [$title_after]; paste buffers before $buffers_before after $buffers_after"
  echo "$screen" | grep -E "hello there|Here you go" | head -4
  local ok=1
  echo "$screen" | grep -q "␛]52;c;cHduZWQ=" || { echo "   FAIL: the answer is not shown with ␛]52;…"; ok=0; }
  echo "$screen" | grep -q "hello there" || { echo "   FAIL: the conversation was wiped"; ok=0; }
  case "$title_after" in *title*) echo "   FAIL: the pane title was set by the model"; ok=0;; esac
  [ "$title_after" = "$title_before" ] || echo "   note: the pane title changed (the app's own title?)"
  [ "$buffers_after" = "$buffers_before" ] || { echo "   FAIL: a paste buffer appeared: $($T list-buffers)"; ok=0; }
  $T list-buffers 2>/dev/null | grep -q pwned && { echo "   FAIL: the clipboard holds 'pwned'"; ok=0; }
  [ $ok = 1 ] && echo "   PASS" || fail=1
  $T send-keys -t "$pane" C-q
}

check embedded "$APP --db $WORK/embedded.sqlite3 --model gpt-mock --new"

PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
OPENAI_BASE_URL=$BASE OPENAI_API_KEY=x "$APP" serve --port "$PORT" --db "$WORK/serve.sqlite3" --model gpt-mock \
  > "$WORK/serve.log" 2>&1 &
SERVE=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$PORT/instance-ai/health" >/dev/null && break; sleep 0.2; done
check remote "$APP --url http://127.0.0.1:$PORT --new"

exit $fail
