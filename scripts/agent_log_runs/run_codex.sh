#!/usr/bin/env bash
# Runs Codex CLI (installed apart: npm install --prefix /tmp/agents-npm @openai/codex@0.169.0)
# on the demo repo against the scripted model; its rollout lands under
# /tmp/agent-home/.codex/sessions/ and its `codex exec --json` output to /tmp/codex-exec.jsonl.
# The model name only picks Codex's bundled tool set
# (exec_command + freeform apply_patch); every reply comes from episodes.codex().
set -euo pipefail
# Needs: python3.11 -m venv /tmp/demo-venv && /tmp/demo-venv/bin/pip install pytest
here="$(cd "$(dirname "$0")" && pwd)"
codex="${CODEX:-/tmp/agents-npm/node_modules/.bin/codex}"
port=18080
python3 "$here/scripted_model.py" codex "$port" /tmp/requests-codex.jsonl 2>/tmp/server-codex.log &
server=$!
trap 'kill "$server"' EXIT
sleep 1
rm -rf /tmp/agent-home && mkdir -p /tmp/agent-home/.codex
# The demo's Python (a venv with pytest) first on PATH, in login shells too.
echo 'export PATH=/tmp/demo-venv/bin:$PATH' > /tmp/agent-home/.profile
cat > /tmp/agent-home/.codex/config.toml <<EOF
model = "gpt-5.5"
model_provider = "scripted"

[model_providers.scripted]
name = "Scripted local model"
base_url = "http://127.0.0.1:$port/v1"
wire_api = "responses"
EOF
"$here/make_demo_repo.sh" /tmp/demo-repo
cd /tmp/demo-repo
env -i HOME=/tmp/agent-home PATH=/tmp/demo-venv/bin:/usr/local/bin:/usr/bin:/bin \
  TERM=dumb LANG=C.UTF-8 "$codex" exec --dangerously-bypass-approvals-and-sandbox \
  --json "The median of an even-length list is wrong; fix it and add a test." \
  </dev/null >/tmp/codex-exec.jsonl
find /tmp/agent-home/.codex/sessions -name 'rollout-*.jsonl'
