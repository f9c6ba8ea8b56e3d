"""Runs an OpenHands software-agent-sdk agent (terminal + file_editor tools) on the demo repo
against the scripted model, with its conversation persisted under /tmp/oh-conversations.

Run with the SDK's own interpreter (installed apart: a Python 3.12 venv at /tmp/oh-venv with
openhands-sdk and openhands-tools 1.58.2): /tmp/oh-venv/bin/python run_openhands.py PORT.
"""

from __future__ import annotations

import sys

from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.tools.file_editor import FileEditorTool
from openhands.tools.terminal import TerminalTool
from pydantic import SecretStr

WORKSPACE = "/tmp/demo-repo"  # noqa: S108 (the throwaway repo make_demo_repo.sh builds)
CONVERSATIONS = "/tmp/oh-conversations"  # noqa: S108


def main() -> None:
    port = int(sys.argv[1])
    llm = LLM(
        model="openai/scripted-model",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key=SecretStr("scripted-not-a-key"),
        usage_id="agent",
    )
    agent = Agent(llm=llm, tools=[Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name)])
    conversation = Conversation(agent=agent, workspace=WORKSPACE, persistence_dir=CONVERSATIONS)
    conversation.send_message("The median of an even-length list is wrong; fix it and add a test.")
    conversation.run()
    print(conversation.id)


if __name__ == "__main__":
    main()
