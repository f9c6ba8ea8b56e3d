#!/usr/bin/env bash
# Runs run_openhands.py (OpenHands software-agent-sdk) on the demo repo against the scripted
# model. Events land one file each in /tmp/oh-conversations/<id>/events/.
# Every reply comes from episodes.openhands().
# Needs: python3.11 -m venv /tmp/demo-venv && /tmp/demo-venv/bin/pip install pytest
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${OH_PYTHON:-/tmp/oh-venv/bin/python}"
port=18083
python3 "$here/scripted_model.py" openhands "$port" /tmp/requests-openhands.jsonl \
  2>/tmp/server-openhands.log &
server=$!
trap 'kill "$server"' EXIT
sleep 1
rm -rf /tmp/agent-home /tmp/oh-conversations && mkdir -p /tmp/agent-home
echo 'export PATH=/tmp/demo-venv/bin:$PATH' > /tmp/agent-home/.profile
"$here/make_demo_repo.sh" /tmp/demo-repo
cd /tmp/demo-repo
env -i HOME=/tmp/agent-home PATH=/tmp/demo-venv/bin:/usr/local/bin:/usr/bin:/bin TERM=dumb \
  LANG=C.UTF-8 "$python" "$here/run_openhands.py" "$port" </dev/null
find /tmp/oh-conversations -path '*/events/*' | sort
