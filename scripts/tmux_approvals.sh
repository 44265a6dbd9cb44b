#!/usr/bin/env bash
# Approvals a person can trust (issue 12), tried as a new user would in a real terminal (tmux):
# a real OpenAI-compatible model server (tests.support.openai_server, scripted to call
# write-file 3 s after each request) and the app with --workspace.
#   1. typing a search query full of y/a/n while a write-file card appears writes nothing;
#   2. Ctrl+G then y writes the file;
#   3. a card waiting in another thread is visible from the open one (thread list marker,
#      status line) and the terminal is signalled (window title; bell).
# Usage: scripts/tmux_approvals.sh [width height]   (default 160 48; try 80 24)
set -u
W=${1:-160}; H=${2:-48}
PY=${PY:-/tmp/venv/bin/python}
APP=${APP:-/tmp/venv/bin/instance-ai}
WORK=$(mktemp -d /tmp/tmux-approvals.XXXX)
SESSION=${SESSION:-"approvals-$$"}
WS="$WORK/workspace"; mkdir -p "$WS"
cat > "$WORK/script.json" <<'JSON'
[
  {"when": {"last_role": "tool"}, "respond": {"text": "Done: the file is written."}},
  {"when": {"contains": "notes", "has_tool": "write-file"},
   "respond": {"first_chunk_delay": 3.0, "tool_calls": [{"name": "write-file",
               "arguments": {"path": "notes.txt", "content": "notes written by the agent\n"}}]}},
  {"when": {"contains": "todo", "has_tool": "write-file"},
   "respond": {"first_chunk_delay": 3.0, "tool_calls": [{"name": "write-file",
               "arguments": {"path": "todo.txt", "content": "todo written by the agent\n"}}]}},
  {"when": {"contains": "notes"}, "respond": {"text": "{\"title\": \"My notes\"}"}},
  {"respond": {"text": "{\"title\": \"The todo list\"}"}}
]
JSON
"$PY" -m tests.support.openai_server --port 0 --script "$WORK/script.json" > "$WORK/llm.out" 2> "$WORK/llm.err" &
LLM=$!
cleanup() { [ -n "${KEEP:-}" ] || tmux kill-session -t "$SESSION" 2>/dev/null; kill "$LLM" 2>/dev/null; }
trap cleanup EXIT
for _ in $(seq 50); do [ -s "$WORK/llm.out" ] && break; sleep 0.1; done
BASE=$("$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["base_url"])' "$WORK/llm.out")
echo "model server: $BASE   workspace: $WS"

tmux new-session -d -s "$SESSION" -x "$W" -y "$H" \
  "OPENAI_BASE_URL=$BASE OPENAI_API_KEY=x XDG_CONFIG_HOME=$WORK/config $APP --db $WORK/db.sqlite3 --workspace $WS --model scripted --new"
tmux set-option -t "$SESSION" set-titles on >/dev/null
keys() { tmux send-keys -t "$SESSION" "$@"; }
slowly() { local text=$1 i; for ((i = 0; i < ${#text}; i++)); do keys -l "${text:i:1}"; sleep 0.15; done; }
screen() { tmux capture-pane -p -t "$SESSION"; }
title() { tmux display-message -p -t "$SESSION" '#{pane_title}'; }
files() { ls "$WS" | tr '\n' ' '; }
for _ in $(seq 60); do screen | grep -q "Ask Instance AI" && break; sleep 0.5; done   # the app is ready
sleep 1

echo "== 1. a search query full of y/a/n is typed while the write-file card appears"
send() {  # Enter until the app takes it (a message typed before the app is ready stays in the prompt)
  for _ in $(seq 10); do keys Enter; sleep 0.6; screen | grep -qE "running|waiting" && return; sleep 1; done
}
slowly "please write my notes"; send
sleep 0.5
keys -l "/threads"; keys Enter
sleep 0.5
slowly "yay any annual news yes no"   # ~4 s: the card appears in the middle
sleep 1.5
screen | grep -E "write-file|waiting|Search|yay any" | head -8
echo "files in the workspace: [$(files)]   (expected: none)"

echo "== 2. Ctrl+G then y writes the file"
keys C-g; sleep 1.2; keys y; sleep 2.5
screen | grep -E "write-file|Done" | head -4
echo "files in the workspace: [$(files)]   (expected: notes.txt)"

echo "== 3. a card waiting in another thread"
keys C-n; sleep 1
slowly "and the todo list"; send
sleep 0.4
keys -l "/threads"; keys Enter; sleep 0.5
keys Escape; sleep 0.3                                    # clear the old search
keys Down; sleep 0.3; keys Down; sleep 0.3; keys Enter    # the list: back to the first thread
sleep 6
echo "open thread: $(screen | grep -oE '▸ [^▕]*' | head -1)"
screen | grep -E "waiting" | head -6
echo "terminal title: $(title)"
echo "bell flag: $(tmux display-message -p -t "$SESSION" '#{window_bell_flag}')"
echo "files in the workspace: [$(files)]   (expected: notes.txt only)"
keys C-g; sleep 3; keys y; sleep 2.5   # the card of the thread just opened ignores keys for its first 0.5 s
echo "after Ctrl+G, y: files in the workspace: [$(files)]   (expected: notes.txt todo.txt)"
echo "terminal title: $(title)"
screen | tail -4
