#!/usr/bin/env bash
# Runs the four agents one after another, each in its own UTS namespace with the neutral host
# name "agent-sandbox" (OpenHands writes the host name into every terminal observation), and
# copies the logs they wrote to $1 (default /tmp/agent-logs), byte for byte; OpenHands' one
# file per event is written there one event per line, in order.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-/tmp/agent-logs}"
rm -rf "$out" && mkdir -p "$out"/{codex,claude-code,mini-swe-agent,openhands-v1}
sandboxed() { unshare --uts bash -c 'hostname agent-sandbox && exec "$@"' _ "$@"; }

sandboxed "$here/run_codex.sh"
cp /tmp/agent-home/.codex/sessions/*/*/*/rollout-*.jsonl "$out/codex/"
cp /tmp/codex-exec.jsonl "$out/codex/exec_json_demo_repo.jsonl"

sandboxed "$here/run_claude.sh"
cp /tmp/agent-home/.claude/projects/-tmp-demo-repo/*.jsonl "$out/claude-code/"
cp /tmp/claude-stream.jsonl "$out/claude-code/stream_json_demo_repo.jsonl"

sandboxed "$here/run_mini.sh"
cp /tmp/mini-out/demo-repo.traj.json "$out/mini-swe-agent/"

sandboxed "$here/run_openhands.sh"
for conversation in /tmp/oh-conversations/*/; do
  id="$(basename "$conversation")"
  for event in "$conversation"events/event-*.json; do
    python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1])), ensure_ascii=False))' "$event"
  done > "$out/openhands-v1/$id.events.jsonl"
done
find "$out" -type f | sort
