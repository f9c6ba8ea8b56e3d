"""core.bidi and the page middleware: every bidi control becomes a visible marker (#22.15)."""

from __future__ import annotations

import pytest
from django.test import Client

from core.bidi import BIDI_CONTROLS, has_bidi, marker, neutralise, neutralise_utf8
from core.templatetags.rewardhub_tags import breakable
from tests.test_review_services import make_trajectory


def test_every_control_is_replaced_by_a_marker_naming_it() -> None:
    text = "ls " + "".join(BIDI_CONTROLS) + " done"
    out = neutralise(text)
    assert not has_bidi(out)
    assert "[U+202E RLO]" in out and "[U+061C ALM]" in out and "[U+200F RLM]" in out
    assert neutralise_utf8(text.encode()) == out.encode()
    assert [marker(c) for c in "\u2066\u2069"] == ["[U+2066 LRI]", "[U+2069 PDI]"]
    plain = "naïve – ünïcödé ✓ עברית".encode()
    assert neutralise_utf8(plain) is plain  # untouched, not even copied


def test_breakable_escapes_and_breaks_long_runs() -> None:
    out = str(breakable("<b>" + "x" * 100 + "&" + " short"))
    assert out.startswith("&lt;b&gt;") and "<b>" not in out
    assert out.count("<wbr>") == 2 and "&amp;" in out and out.endswith(" short")


@pytest.mark.django_db
def test_pages_never_carry_a_bidi_control(client: Client, make_user) -> None:  # type: ignore[no-untyped-def]
    user = make_user("ann", "expert")
    trajectory = make_trajectory(1, rollout="x\u202egpj.sh", text="see \u2067this\u2069")
    client.force_login(user)
    for url in (f"/review/trajectories/{trajectory.pk}/", "/review/trajectories/"):
        response = client.get(url)
        body = response.content.decode()
        assert response.status_code == 200 and not has_bidi(body)
        assert "[U+202E RLO]" in body
