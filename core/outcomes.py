"""One wording for a trajectory's outcome, wherever a page, the admin or the API docs show it.

The environment's verdict is ``outcome.resolved`` (C1): true, false or absent. Every place that
words it reads these names (templates through the ``outcome_word`` / ``outcome_badge``
filters), so no page says "passed", "success", "solved", "failed" or "unresolved" for it.
"""

from __future__ import annotations

from typing import Final

RESOLVED: Final = "resolved"
NOT_RESOLVED: Final = "not resolved"
NO_OUTCOME: Final = "no outcome"

# The verdict as stored (Trajectory.resolved) -> its words.
OUTCOME_WORDS: Final[dict[bool | None, str]] = {
    True: RESOLVED,
    False: NOT_RESOLVED,
    None: NO_OUTCOME,
}
# The badge tone of each verdict (the review pages' ``rv-badge`` classes).
OUTCOME_TONES: Final[dict[bool | None, str]] = {True: "good", False: "bad", None: ""}

# What the ``resolved`` filter and field mean, for the API docs.
RESOLVED_HELP: Final = (
    f"The environment's verdict: true is '{RESOLVED}', false '{NOT_RESOLVED}', "
    f"absent '{NO_OUTCOME}'."
)


def verdict(value: object) -> bool | None:
    """A stored or raw verdict as True, False or None (anything but a bool is no verdict)."""
    return value if isinstance(value, bool) else None


def outcome_word(value: object) -> str:
    return OUTCOME_WORDS[verdict(value)]


def tests_words(passed: int, failed: int) -> str:
    """Test counts, worded without a second verdict vocabulary: ``3 of 4 tests pass``."""
    return f"{passed} of {passed + failed} tests pass"
