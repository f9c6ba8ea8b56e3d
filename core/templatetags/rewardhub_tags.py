from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from core import outcomes
from core.bidi import neutralise

register = template.Library()


@register.filter
def get_item(mapping: Mapping[str, Any] | None, key: str) -> Any:
    """``{{ dict|get_item:key }}`` for keys held in variables."""
    return (mapping or {}).get(key)


@register.filter
def label(name: str) -> str:
    """``task_type`` -> ``Task type`` for field names shown as labels."""
    text = str(name).replace("_", " ")
    return text[:1].upper() + text[1:]


@register.filter
def visible_controls(text: object) -> str:
    """Untrusted text with every bidirectional control shown as a visible marker (``core.bidi``,
    what every page gets from its middleware anyway; auto-escaping still applies after this)."""
    return neutralise(str(text))


_LONG_RUN = re.compile(r"\S{48,}")


@register.filter(is_safe=True)
def breakable(text: Any) -> SafeString:
    """Escape ``text`` and give every unbroken run of 48+ characters a line-break opportunity
    (``<wbr>``) every 48: a 100,000-character token in prose wraps, and the browser lays it out
    at once (``overflow-wrap: anywhere`` on such a word takes Chromium seconds)."""
    raw = str(text)
    out, at = [], 0
    for match in _LONG_RUN.finditer(raw):
        out.append(escape(raw[at : match.start()]))
        run = match.group(0)
        out.append("<wbr>".join(escape(run[i : i + 48]) for i in range(0, len(run), 48)))
        at = match.end()
    out.append(escape(raw[at:]))
    return mark_safe("".join(out))  # noqa: S308 - every piece escaped, only <wbr> added


@register.filter
def outcome_word(value: object) -> str:
    """A trajectory's verdict in the one wording (``core.outcomes``)."""
    return outcomes.outcome_word(value)


@register.filter(is_safe=True)
def outcome_badge(value: object) -> SafeString:
    """The verdict as a badge: ``<span class="rv-badge good verdict">resolved</span>``."""
    tone = outcomes.OUTCOME_TONES[outcomes.verdict(value)]
    return format_html(
        '<span class="rv-badge {} verdict">{}</span>', tone, outcomes.outcome_word(value)
    )


@register.filter
def tests_words(outcome: Mapping[str, Any] | None) -> str:
    """An outcome's test counts in the one wording; empty when it has none."""
    passed = (outcome or {}).get("tests_passed")
    if not isinstance(passed, int):
        return ""
    failed = (outcome or {}).get("tests_failed")
    return outcomes.tests_words(passed, failed if isinstance(failed, int) else 0)
