"""What a file's name and place say about the trajectory in it, where its content does not.

A bare mini-swe-agent message list and an OpenHands V1 event log carry no instance id: the id is
the file's name (mini-swe-agent's batch runs write ``<instance_id>/<instance_id>.traj.json``; a
V1 conversation is stored under its id) or, for a generic name, its directory's. An aider chat
history (``.aider.chat.history.md``) is written to the git root, which is the agent's workspace.
Every value taken from the path says so in ``metadata`` (``id_from``, ``workspace_from``).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

ID_FROM_NAME = ("mini-swe-agent", "openhands-v1")
AIDER_HISTORY = ".aider.chat.history.md"
# Names a tool gives every file, which say nothing about the run in it.
GENERIC_NAMES = frozenset(
    {"", "events", "event", "trajectory", "traj", "output", "last_mini_run", "conversation", "log"}
)
EVENT_FOLDERS = frozenset({"events", "event"})


def _path(source: str) -> PurePosixPath:
    return PurePosixPath(source.replace("\\", "/"))


def _stem(name: str) -> str:
    """``astropy__astropy-12907.traj.json`` -> ``astropy__astropy-12907``."""
    return name.split(".", 1)[0] if not name.startswith(".") else ""


def id_from_path(source: str) -> tuple[str, str] | None:
    """(id, where it comes from), or None when the name is one a tool gives every file and
    no folder stands for the run (``runs/last_mini_run.traj.json``)."""
    path = _path(source)
    stem = _stem(path.name).lower()
    if stem not in GENERIC_NAMES:
        return _stem(path.name), "file name"
    folders = [p for p in path.parent.parts if p not in ("/", ".", "..") and not p.endswith(":")]
    if folders and folders[-1].lower() in EVENT_FOLDERS:
        folders.pop()  # V1 keeps a conversation's events in <conversation id>/events/
    elif stem not in EVENT_FOLDERS:
        return None
    if folders and folders[-1].lower() not in GENERIC_NAMES:
        return folders[-1], "directory name"
    return None


def apply_source(fmt: str, canonical: dict[str, Any], source: str | None) -> dict[str, Any]:
    """Fills what the content lacks from the path the record was read from; never overrides."""
    if not source or not isinstance(canonical, dict):
        return canonical
    metadata = canonical.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        return canonical
    if fmt in ID_FROM_NAME and not canonical.get("id") and (found := id_from_path(source)):
        canonical["id"], metadata["id_from"] = found
    path = _path(source)
    drive = bool(path.parts) and path.parts[0].endswith(":")  # a Windows path: C:/...
    rooted = path.is_absolute() or drive
    if fmt == "aider" and not metadata.get("workspace") and path.name == AIDER_HISTORY and rooted:
        metadata["workspace"] = str(path.parent)
        metadata["workspace_from"] = "the chat history's folder (aider writes it to the git root)"
    return canonical
