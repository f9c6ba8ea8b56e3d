"""The static shell analyzer's knobs (``settings.SAFETY``, read by ``safety.services``)."""

from __future__ import annotations

from rewardhub.settings.environment import env

SAFETY = {
    # Scans use the newest published version of this policy (created from the built-in default).
    "DEFAULT_POLICY": env.str("SAFETY_DEFAULT_POLICY", default="default"),
    # Used when a trajectory's metadata names no workspace.
    "WORKSPACE_ROOTS": env.list("SAFETY_WORKSPACE_ROOTS", default=["/testbed"]),
    # bashlex (GPL-3.0-or-later) cross-checks tree-sitter-bash; see safety/analyzer docs.
    "USE_BASHLEX": env.bool("SAFETY_USE_BASHLEX", default=True),
    "MAX_COMMAND_CHARS": env.int("SAFETY_MAX_COMMAND_CHARS", default=20_000),
    "MAX_ANALYZE_COMMANDS": env.int("SAFETY_MAX_ANALYZE_COMMANDS", default=1000),
    # Wall-clock bound of one command's analysis (s; 0: none): past it the command is flagged
    # ``analyzer.too-complex`` for review, never passed (safety.analyzer.deadline).
    "COMMAND_SECONDS": env.float("RH_ANALYZER_COMMAND_SECONDS", default=2.0),
    # Wall-clock bound of all the shell analysis one API request asks for (s; negative: none):
    # past it the analyze and score endpoints answer 413 naming this limit, so one request
    # cannot hold a worker for the product of its command count and the per-command bound.
    "REQUEST_SECONDS": env.float("RH_ANALYZER_REQUEST_SECONDS", default=10.0),
    # A running rescan without committed progress for this long (s) is shown as stalled (its
    # worker was most likely killed) and may be resumed from the safety pages.
    "SCAN_STALL_SECONDS": env.int("RH_SCAN_STALL_SECONDS", default=300),
    # A rescan of more trajectories than this is split into parts of this many, each its own
    # task on the scan queue, so every scan worker takes a share (0: never split).
    "SCAN_PART_SIZE": env.int("RH_SCAN_PART_SIZE", default=2000),
}
