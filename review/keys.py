"""The viewer's keyboard shortcuts: the one list the help dialog, the legend, the key handler
(static/js/review.js reads the rendered legend) and the README table all come from.

Number keys keep the app's long-standing meaning (1 = +1 trusted, 3 = -1 untrusted): reviewers
trained on the app keep their muscle memory; the README follows this list (tested).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shortcut:
    key: str  # KeyboardEvent.key, or "Ctrl+Enter"
    action: str  # what review.js does
    text: str  # what the legend and the README say


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("j", "next", "next step"),
    Shortcut("k", "previous", "previous step"),
    Shortcut("1", "label:1", "label the current step +1 trusted"),
    Shortcut("2", "label:0", "label the current step 0 neutral"),
    Shortcut("3", "label:-1", "label the current step −1 untrusted"),
    Shortcut("b", "cycle-row", "cycle overall / behaviour rows of the current step"),
    Shortcut("r", "reasoning", "open / close the reasoning of the current step"),
    Shortcut("c", "comment", "comment on the current step (Esc leaves)"),
    Shortcut("u", "focus", "next step the classifier is unsure about (uncertainty queues)"),
    Shortcut("g", "jump", "jump to a step by number"),
    Shortcut("z", "undo", "undo your last label on this page (again: the one before)"),
    Shortcut("Ctrl+Enter", "submit", "submit and open the next trajectory"),
    Shortcut("?", "help", "show / hide this help"),
)

# The label keys, for the one-line legend beside the labels.
LABEL_KEYS: tuple[Shortcut, ...] = tuple(s for s in SHORTCUTS if s.action.startswith("label:"))
