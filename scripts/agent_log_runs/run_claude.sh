#!/usr/bin/env bash
# Runs Claude Code (installed apart: npm install --prefix /tmp/agents-npm @anthropic-ai/claude-code)
# in print mode on the demo repo against the scripted model. Its session file lands under
# /tmp/agent-home/.claude/projects/-tmp-demo-repo/; its stream-json output goes to
# /tmp/claude-stream.jsonl. Every reply comes from episodes.claude().
# Needs: python3.11 -m venv /tmp/demo-venv && /tmp/demo-venv/bin/pip install pytest
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
claude="${CLAUDE:-/tmp/agents-npm/node_modules/.bin/claude}"
port=18081
python3 "$here/scripted_model.py" claude "$port" /tmp/requests-claude.jsonl 2>/tmp/server-claude.log &
server=$!
trap 'kill "$server"' EXIT
sleep 1
rm -rf /tmp/agent-home && mkdir -p /tmp/agent-home
echo 'export PATH=/tmp/demo-venv/bin:$PATH' > /tmp/agent-home/.profile
"$here/make_demo_repo.sh" /tmp/demo-repo
cd /tmp/demo-repo
# IS_SANDBOX=1: this throwaway machine runs as root, where Claude Code otherwise refuses to
# skip its permission prompts.
env -i HOME=/tmp/agent-home PATH=/tmp/demo-venv/bin:/usr/local/bin:/usr/bin:/bin TERM=dumb \
  LANG=C.UTF-8 SHELL=/bin/bash IS_SANDBOX=1 \
  ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=scripted-not-a-key \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
  "$claude" -p "The median of an even-length list is wrong; fix it and add a test." \
  --output-format stream-json --verbose --dangerously-skip-permissions \
  --model claude-sonnet-4-5 </dev/null >/tmp/claude-stream.jsonl
find /tmp/agent-home/.claude/projects -name '*.jsonl'
