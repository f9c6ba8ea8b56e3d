"""OpenHands event streams: a list of action / observation events, or an eval output record.

Agent actions become assistant tool calls (``run`` -> ``bash``; others keep their function name
from ``tool_call_metadata``), observations become tool messages matched by ``tool_call_id`` or by
``cause`` (the id of the action they answer). Several actions from one model response (same
``model_response.id``) are merged into one assistant message, i.e. one step.
"""

from __future__ import annotations

from typing import Any

from annotations.importers.base import (
    OPENHANDS_SANDBOX,
    ImportFormatError,
    assistant,
    bash_call,
    passthrough,
    str_or_none,
    text_of,
    tool_call,
    tool_result,
    with_openhands_sandbox,
    workspace_named_in,
)

FORMAT = "openhands"
# Events that describe the controller, not the conversation.
SKIPPED_ACTIONS: frozenset[str] = frozenset(
    {"change_agent_state", "agent_state_changed", "recall", "null", "condensation"}
)
SKIPPED_OBSERVATIONS: frozenset[str] = frozenset(
    {"agent_state_changed", "recall", "null", "condensation"}
)
# Default tool names for actions recorded without tool_call_metadata (older, non-FC agents).
DEFAULT_TOOL_NAMES: dict[str, str] = {
    "run_ipython": "execute_ipython_cell",
    "read": "str_replace_editor",
    "edit": "str_replace_editor",
    "write": "str_replace_editor",
    "browse": "browser",
    "browse_interactive": "browser",
    "think": "think",
    "delegate": "delegate",
}
# Keys an action of the flat (args-less) event layout of older runs and the resolver carries.
FLAT_ARGS: frozenset[str] = frozenset(
    {"command", "code", "thought", "content", "outputs", "path", "url", "final_thought"}
)
# Keys of a flat event that describe the event, not its arguments.
EVENT_KEYS: frozenset[str] = frozenset(
    {"id", "timestamp", "source", "message", "action", "observation", "cause",
     "tool_call_metadata", "llm_metrics", "action_risk", "is_confirmed", "timeout"}
)  # fmt: skip
# Args that are bookkeeping rather than tool input.
NOISE_ARGS: frozenset[str] = frozenset(
    {"thought", "impl_source", "confirmation_state", "security_risk", "hidden", "blocking"}
)


def is_event(item: object) -> bool:
    """An action (``action`` + ``args``/``source``) or observation (``observation`` + content).

    Stricter than "has an action key" because SWE-agent trajectory steps have ``action`` and
    ``observation`` too (but also ``thought`` / ``response``, which events never have).
    """
    if not isinstance(item, dict) or "response" in item:
        return False
    # V1 (software-agent-sdk) events hold objects under "action" / "observation".
    if isinstance(item.get("action"), str):
        return "args" in item or "source" in item or any(key in item for key in FLAT_ARGS)
    if isinstance(item.get("observation"), str):
        return any(key in item for key in ("content", "extras", "cause", "source"))
    return False


def looks_like_events(items: list) -> bool:
    """A list is an event stream if any element is an event (or an [action, observation] pair)."""
    return any(
        is_event(item) or (isinstance(item, list) and any(is_event(x) for x in item))
        for item in items
    )


def looks_like(record: object) -> bool:
    """An event list, or an eval output record whose ``history``/``events`` is one."""
    if isinstance(record, list):
        return looks_like_events(record)
    if isinstance(record, dict):
        for key in ("history", "events"):
            value = record.get(key)
            if isinstance(value, list) and looks_like_events(value):
                return True
    return False


def _flatten(items: list) -> list[dict]:
    """Older runs store ``[[action, observation], ...]``; newer ones a flat list."""
    events: list[dict] = []
    for item in items:
        if isinstance(item, dict):
            events.append(item)
        elif isinstance(item, list):
            events.extend(x for x in item if isinstance(x, dict))
    return events


def _meta(event: dict) -> dict:
    meta = event.get("tool_call_metadata")
    return meta if isinstance(meta, dict) else {}


def _response(meta: dict) -> dict:
    response = meta.get("model_response")
    return response if isinstance(response, dict) else {}


def _response_reasoning(response: dict) -> str:
    """The model's hidden reasoning, when the stored response kept it."""
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            reasoning = message.get("reasoning_content")
            if isinstance(reasoning, str):
                return reasoning
    return ""


class _Builder:
    """Accumulates C1 messages while walking the events in order."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.call_of_action: dict[str, str] = {}  # event id -> tool call id
        self.last_response: tuple[str, int] | None = None  # (response id, message index)
        self.model: str | None = None
        self.workspace: str | None = None  # the terminal's working directory, first reported
        self.file_paths: list[str] = []  # the paths the agent's file actions name

    def add_call(self, event: dict, call: dict, text: str) -> None:
        meta = _meta(event)
        response = _response(meta)
        response_id = str_or_none(response.get("id"))
        if self.model is None and isinstance(response.get("model"), str):
            self.model = response["model"]
        event_id = str_or_none(event.get("id"))
        if event_id is not None and call["id"] is not None:
            self.call_of_action[event_id] = call["id"]
        if response_id and self.last_response and self.last_response[0] == response_id:
            target = self.messages[self.last_response[1]]
            target.setdefault("tool_calls", []).append(call)
            return
        reasoning = _response_reasoning(response)
        self.messages.append(assistant(text, reasoning=reasoning, tool_calls=[call]))
        self.last_response = (response_id, len(self.messages) - 1) if response_id else None

    def add_text(self, role: str, text: str, *, reasoning: str = "") -> None:
        if role == "assistant":
            self.messages.append(assistant(text, reasoning=reasoning))
        else:
            self.messages.append({"role": role, "content": text})
        self.last_response = None


def _args(event: dict) -> dict:
    """``args``, or (flat layout) the event's own keys other than the event's bookkeeping."""
    if isinstance(event.get("args"), dict):
        return event["args"]
    return {k: v for k, v in event.items() if k not in EVENT_KEYS}


# The editor command a read / write event stands for, when its args do not name one.
EDITOR_COMMAND_OF: dict[str, str] = {"read": "view", "write": "create"}


def _rebuilt_arguments(kind: str, name: str, args: dict) -> dict:
    arguments = {k: v for k, v in args.items() if k not in NOISE_ARGS}
    if name == "str_replace_editor" and "command" not in arguments and kind in EDITOR_COMMAND_OF:
        arguments["command"] = EDITOR_COMMAND_OF[kind]
        if kind == "write" and "file_text" not in arguments and "content" in arguments:
            arguments["file_text"] = arguments["content"]
    return arguments


def _sent_arguments(meta: dict, call_id: str) -> str | dict | None:
    """The arguments of call ``call_id`` as the stored model response holds them."""
    choices = _response(meta).get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict) and str_or_none(call.get("id")) == call_id:
            function = call.get("function")
            arguments = function.get("arguments") if isinstance(function, dict) else None
            if isinstance(arguments, str | dict):
                return arguments
    return None


def _action(builder: _Builder, event: dict, index: int) -> None:
    kind = event.get("action")
    args = _args(event)
    source = event.get("source")
    if source is None and kind == "message":
        # Flat events name no source: the task comes first, the agent speaks after acting.
        source = "user" if not any(m["role"] == "assistant" for m in builder.messages) else "agent"
    thought = args.get("thought") if isinstance(args.get("thought"), str) else ""
    meta = _meta(event)
    call_id = str_or_none(meta.get("tool_call_id"))
    call_id = call_id or f"openhands-{str_or_none(event.get('id')) or index}"
    function_name = meta.get("function_name")
    if not isinstance(kind, str) or kind in SKIPPED_ACTIONS:
        return
    if kind in ("read", "edit", "write") and source != "user" and isinstance(args.get("path"), str):
        builder.file_paths.append(args["path"])
    if kind == "system":
        builder.add_text("system", text_of(args.get("content")) or text_of(event.get("message")))
    elif kind == "message":
        text = text_of(args.get("content")) or text_of(event.get("message"))
        builder.add_text("user" if source == "user" else "assistant", text)
    elif kind == "run" and source != "user":
        command = args.get("command")
        builder.add_call(event, bash_call(call_id, text_of(command)), thought)
    elif kind == "run" and source == "user":
        # A command the human typed into the terminal is not an agent step.
        builder.add_text("user", f"$ {text_of(args.get('command'))}")
    elif kind == "finish" and not meta:
        final = args.get("final_thought") or args.get("outputs") or event.get("message")
        builder.add_text("assistant", text_of(final) or thought)
    elif kind == "think" and not meta:
        builder.add_text("assistant", "", reasoning=thought)
    elif meta or kind in DEFAULT_TOOL_NAMES:
        name = function_name if isinstance(function_name, str) and function_name else None
        name = name or DEFAULT_TOOL_NAMES.get(kind, kind)
        sent = _sent_arguments(meta, call_id)
        # The arguments the model sent (the editor's whole file text among them), else the
        # event's args, which OpenHands rebuilds and may shorten.
        tool_args = sent if sent is not None else _rebuilt_arguments(kind, name, args)
        if kind == "finish" and not thought:
            thought = text_of(args.get("final_thought"))
        builder.add_call(event, tool_call(call_id, name, tool_args), thought)


def _observation(builder: _Builder, event: dict) -> None:
    kind = event.get("observation")
    if not isinstance(kind, str) or kind in SKIPPED_OBSERVATIONS:
        return
    extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
    meta = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
    if builder.workspace is None and isinstance(meta.get("working_dir"), str):
        builder.workspace = meta["working_dir"]
    content = text_of(event.get("content")) or text_of(event.get("message"))
    call_id = str_or_none(_meta(event).get("tool_call_id"))
    if call_id is None:
        cause = str_or_none(event.get("cause"))
        call_id = builder.call_of_action.get(cause) if cause is not None else None
    if call_id is not None:
        builder.messages.append(tool_result(call_id, content))
    elif content:
        # Environment feedback tied to no call (e.g. an error) reaches the agent as user text.
        builder.add_text("user", content)


def _sandbox_workspace(paths: list[str]) -> str | None:
    """``/workspace`` when every path the agent's file actions name lies in it.

    A run whose terminal never reported its directory (only editor calls, no command) still
    worked in the sandbox's workspace; without it, an ordinary ``rm`` there reads as outside.
    """
    if paths and all(
        path == OPENHANDS_SANDBOX or path.startswith(f"{OPENHANDS_SANDBOX}/") for path in paths
    ):
        return OPENHANDS_SANDBOX
    return None


def _issue_id(issue: object) -> str | None:
    """The resolver names its task by issue: ``owner/repo#number``."""
    if not isinstance(issue, dict):
        return None
    owner, repo, number = issue.get("owner"), issue.get("repo"), issue.get("number")
    if isinstance(owner, str) and isinstance(repo, str) and str_or_none(number):
        return f"{owner}/{repo}#{number}"
    return None


def convert(record: object) -> dict:
    """Unknown action/observation kinds are skipped: the stream grows new kinds over time."""
    source: dict = {}
    if isinstance(record, dict):
        source = record
        items = record.get("history")
        if not (isinstance(items, list) and looks_like_events(items)):
            items = record.get("events")
    else:
        items = record
    if not isinstance(items, list) or not looks_like_events(items):
        raise ImportFormatError(f"{FORMAT}: expected a list of events", field="events")
    builder = _Builder()
    instruction = source.get("instruction")
    events = _flatten(items)
    if (
        isinstance(instruction, str)
        and instruction
        and not any(
            e.get("action") == "message" and e.get("source") in ("user", None) for e in events
        )
    ):
        builder.add_text("user", instruction)
    for index, event in enumerate(events):
        if "action" in event:
            _action(builder, event, index)
        elif "observation" in event:
            _observation(builder, event)
    metadata: dict[str, Any] = {"agent": "openhands"}
    source_meta = source.get("metadata")
    if isinstance(source_meta, dict):
        if isinstance(source_meta.get("agent_class"), str):
            metadata["agent"] = source_meta["agent_class"]
        llm_config = source_meta.get("llm_config")
        if isinstance(llm_config, dict) and isinstance(llm_config.get("model"), str):
            builder.model = llm_config["model"]
    if builder.model:
        metadata["model"] = builder.model
    outcome: dict[str, Any] = {}
    test_result = source.get("test_result")
    if isinstance(test_result, dict):
        metadata["source_info"] = test_result
        report = test_result.get("report")
        if isinstance(report, dict) and isinstance(report.get("resolved"), bool):
            outcome["resolved"] = report["resolved"]
        for key in ("tests_passed", "tests_failed"):
            if isinstance(test_result.get(key), int) and not isinstance(test_result[key], bool):
                outcome[key] = test_result[key]
    if isinstance(source.get("resolved"), bool):
        outcome["resolved"] = source["resolved"]
    if isinstance(source.get("success"), bool):
        # The resolver's verdict (an LLM's judgement that the issue is fixed).
        outcome["success"] = source["success"]
        if isinstance(source.get("result_explanation"), str):
            metadata["result_explanation"] = source["result_explanation"]
    workspace = builder.workspace or workspace_named_in(instruction)
    if workspace is None:
        workspace = _sandbox_workspace(builder.file_paths)
        if workspace is not None:
            metadata["workspace_from"] = "the paths its file actions name (the sandbox's workspace)"
    if workspace:
        metadata["workspace"] = with_openhands_sandbox(workspace)
    canonical: dict[str, Any] = {"messages": builder.messages, "metadata": metadata}
    if outcome:
        canonical["outcome"] = outcome
    patch = source.get("git_patch")
    if not isinstance(patch, str) and isinstance(test_result, dict):
        patch = test_result.get("git_patch")
    if isinstance(patch, str) and patch.strip():
        canonical["patch"] = patch
    instance_id = str_or_none(source.get("instance_id")) or _issue_id(source.get("issue"))
    if instance_id:
        canonical["id"] = instance_id
    return passthrough(source, canonical, keys=("id", "task_type", "outcome"))
