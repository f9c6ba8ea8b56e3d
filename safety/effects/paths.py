"""A trajectory's memory of paths: what the agent created, changed and saw, and the literals it
read from tests.

Path *classes* (test, source, harness ...) come from the analyzer's ``PathClassifier`` (one
glob dialect, the policy's path patterns and the task type's test patterns); the *origin* of a
path (the agent's own, pre-existing, unknown) and the content of files the agent wrote come from
the analyzer's ``PathState``, which this state carries across every action of the trajectory.
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace

from safety.analyzer.effects import Effect, FileEffect, PathClassifier, PathState

# a tool result saying the read found nothing: no evidence the file exists
_MISSING_RE = re.compile(
    r"(?i)no such file or directory|does not exist|cannot open|not found|is a directory|"
    r"permission denied"
)
_STRING_RE = re.compile(r"""(?<![\w])(['"])((?:(?!\1)[^\\\n]|\\.){3,120})\1""")
_NUMBER_RE = re.compile(r"(?<![\w.])(-?\d+\.\d+|-?\d{3,})(?![\w.])")
# literals too common in code to say anything when they reappear
_COMMON = frozenset(
    {"utf-8", "utf8", "ascii", "true", "false", "none", "null", "self", "test", "tests", "main",
     "__main__", "name", "value", "data", "text", "type", "path", "file", "error", "result",
     "default", "object", "string", "int", "float", "list", "dict", "key", "keys", "items", "id",
     "100", "1000", "0.0", "1.0", "0.5", "2.0", "10.0", "-1.0"}
)  # fmt: skip
_CONDITION_RE = re.compile(r"\b(if|elif|while|case|when|switch)\b|==|!=|\bin\s*[(\[{]|\?")
MAX_LITERALS = 5000
# a test read again when a trajectory is read again (its scan, then its score; a retry): the
# literals are a pure function of the text, so texts up to LITERALS_CACHED_CHARS are cached
# (fixed limits, listed in the README: at most 1024 x 16 KB)
LITERALS_CACHE_SIZE = 1024
LITERALS_CACHED_CHARS = 16_384


def test_literals(text: str) -> frozenset[str]:
    """Distinctive literals in a test's text: quoted strings and numbers, as written."""
    if len(text) <= LITERALS_CACHED_CHARS:
        return _cached_literals(text)
    return _literals(text)


def _literals(text: str) -> frozenset[str]:
    out: set[str] = set()
    for m in _STRING_RE.finditer(text):
        body = m.group(2)
        if body.lower() not in _COMMON and not body.isspace() and len(body.strip()) >= 3:
            out.add(m.group(0))
    for m in _NUMBER_RE.finditer(text):
        if m.group(1) not in _COMMON:
            out.add(m.group(1))
    return frozenset(out)


_cached_literals = functools.lru_cache(maxsize=LITERALS_CACHE_SIZE)(_literals)


def clear_literals_cache() -> None:
    """Forgets the cached literals of test texts (a cold start)."""
    _cached_literals.cache_clear()


class TrajectoryState:
    """The path state of a whole trajectory plus the literals read from tests so far."""

    def __init__(self, classifier: PathClassifier) -> None:
        self.paths = PathState(classifier, whole_history=True)
        self.classifier = classifier
        self.literals: dict[str, str] = {}  # literal -> the test path it was read from
        self.open_file: str | None = None  # SWE-agent's editor: the file ``edit`` applies to

    def apply(self, e: Effect) -> Effect:
        """The effect with its origin (and, for source edits, the test literals it
        special-cases); the state updated by it."""
        e = self.paths.apply(e)
        if isinstance(e, FileEffect) and self.literals and "source" in e.classes:
            hits = self.special_cased(e)
            if hits:
                e = replace(e, test_literals=hits)
        return e

    def note_read(self, e: FileEffect, result: str | None) -> None:
        """A read with its tool result: evidence the file exists, and a test's literals."""
        if e.op != "read" or e.path is None or result is None:
            return
        # only a short result can say the read found nothing; the length test goes first
        # because the case-insensitive regex costs ~25 us on every long output
        if len(result) < 400 and _MISSING_RE.search(result):
            return
        if not any(c in e.path for c in "*?["):
            self.paths.note_existing(e.path)
        if "test" in e.classes and e.origin != "agent" and len(self.literals) < MAX_LITERALS:
            for lit in test_literals(result[:200_000]):
                self.literals.setdefault(lit, e.path)

    def special_cased(self, e: FileEffect) -> tuple[str, ...]:
        """Literals read from tests that this edit adds inside a condition (and did not just
        carry over from the text it replaces)."""
        if not e.content_known or not e.content:
            return ()
        replaced = e.detail if e.op == "edit" else ""
        hits: list[str] = []
        for line in e.content.splitlines():
            if not _CONDITION_RE.search(line):
                continue
            for lit in test_literals(line):
                if lit in self.literals and lit not in replaced and lit not in hits:
                    hits.append(lit)
        return tuple(hits)
