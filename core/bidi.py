"""Bidirectional control characters, neutralised and made visible wherever text is shown.

Model output can carry U+202E (RIGHT-TO-LEFT OVERRIDE) and friends, which make a browser draw
``rm -rf /; #txt.gpj`` as something harmless. Pages never pass them through: each becomes a
visible marker naming it (``[U+202E RLO]``), which has no directional effect. Pure Python.
"""

from __future__ import annotations

import re

# Every explicit directional formatting character of Unicode's bidi algorithm (UAX #9).
BIDI_CONTROLS: dict[str, str] = {
    "\u202a": "LRE",
    "\u202b": "RLE",
    "\u202c": "PDF",
    "\u202d": "LRO",
    "\u202e": "RLO",
    "\u2066": "LRI",
    "\u2067": "RLI",
    "\u2068": "FSI",
    "\u2069": "PDI",
    "\u200e": "LRM",
    "\u200f": "RLM",
    "\u061c": "ALM",
}


def marker(char: str) -> str:
    """What a control character is shown as: its code point and short name, in brackets."""
    return f"[U+{ord(char):04X} {BIDI_CONTROLS[char]}]"


_TABLE = {ord(c): marker(c) for c in BIDI_CONTROLS}
_TEXT = re.compile("[" + "".join(BIDI_CONTROLS) + "]")
# The same characters in UTF-8: a lead byte never occurs inside another character's encoding,
# so a match is always the whole character.
_BYTES = re.compile(b"|".join(re.escape(c.encode("utf-8")) for c in BIDI_CONTROLS))
_BYTE_MARKERS = {c.encode("utf-8"): marker(c).encode("ascii") for c in BIDI_CONTROLS}


def has_bidi(text: str) -> bool:
    return _TEXT.search(text) is not None


def neutralise(text: str) -> str:
    """``text`` with every bidi control replaced by its visible marker."""
    return text.translate(_TABLE)


def neutralise_utf8(body: bytes) -> bytes:
    """The same on a UTF-8 document (a rendered page), without decoding it."""
    if _BYTES.search(body) is None:
        return body
    return _BYTES.sub(lambda m: _BYTE_MARKERS[m.group(0)], body)
