#!/usr/bin/env bash
# Runs mini-swe-agent 2.x in text mode (its mini_textbased.yaml config, litellm_textbased model:
# actions as ```mswea_bash_command fences) on the demo repo against the scripted model.
# Installed apart: python3.11 -m venv /tmp/mswea-venv && /tmp/mswea-venv/bin/pip install
# mini-swe-agent==2.4.6. The trajectory lands at /tmp/mini-out/demo-repo.traj.json.
# Every reply comes from episodes.mini().
# Needs: python3.11 -m venv /tmp/demo-venv && /tmp/demo-venv/bin/pip install pytest
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mini="${MINI:-/tmp/mswea-venv/bin/mini}"
port=18082
python3 "$here/scripted_model.py" mini "$port" /tmp/requests-mini.jsonl 2>/tmp/server-mini.log &
server=$!
trap 'kill "$server"' EXIT
sleep 1
rm -rf /tmp/agent-home /tmp/mini-out && mkdir -p /tmp/agent-home /tmp/mini-out
"$here/make_demo_repo.sh" /tmp/demo-repo
cd /tmp/demo-repo
env -i HOME=/tmp/agent-home PATH=/tmp/demo-venv/bin:/usr/local/bin:/usr/bin:/bin TERM=dumb \
  LANG=C.UTF-8 MSWEA_CONFIGURED=true MSWEA_COST_TRACKING=ignore_errors \
  OPENAI_API_KEY=scripted-not-a-key \
  "$mini" -c mini_textbased.yaml -c model.model_class=litellm_textbased \
  -c "model.model_kwargs.api_base=http://127.0.0.1:$port/v1" \
  -c environment.cwd=/tmp/demo-repo \
  -m openai/scripted-model -y --exit-immediately -l 0 \
  -t "The median of an even-length list is wrong; fix it and add a test." \
  -o /tmp/mini-out/demo-repo.traj.json </dev/null
