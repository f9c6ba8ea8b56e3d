"""The rule editor's text path: any text a safety lead pastes is parsed and validated into a
rule or into errors naming the field, never an exception (and never a 500 on the page)."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safety import services
from safety.analyzer import load_default_policy
from safety.models import Policy, PolicyRule
from safety.views import _parse_definition

RULES = load_default_policy().to_dict()["rules"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=15,
)
rule_texts = st.one_of(
    st.text(max_size=200),
    json_values.map(json.dumps),
    st.sampled_from(RULES)
    .map(json.dumps)
    .flatmap(
        # a real rule's text cut or spliced at a random place
        lambda t: st.tuples(st.integers(0, len(t)), st.text(max_size=5)).map(
            lambda p: t[: p[0]] + p[1] + t[p[0] :]
        )
    ),
    st.sampled_from(["[" * 100_000, "{" * 50_000, '{"a":' * 2000 + "1" + "}" * 2000]),
)


def _check_text(policy: Policy, text: str) -> None:
    definition, errors = _parse_definition(text)
    if errors:
        assert definition is None and list(errors) == ["definition"] and errors["definition"]
        return
    try:
        services.policy_rule_validate(policy=policy, definition=definition)
    except ValidationError as exc:
        assert exc.messages


def test_any_rule_text_parses_and_validates_or_names_errors(db: None) -> None:
    policy = Policy.objects.get(pk=services.default_policy_version().policy_id)

    @settings(
        max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(rule_texts)
    def run(text: str) -> None:
        _check_text(policy, text)

    run()


def test_deeply_nested_rule_text_is_an_inline_error(client: Client, safety_lead: Any) -> None:
    services.default_policy_version()
    client.force_login(safety_lead)
    before = PolicyRule.objects.count()
    deep = "[" * 100_000 + "]" * 100_000
    response = client.post("/safety/policies/default/rules/", {"definition": deep})
    assert response.status_code == 400
    assert "nested deeper than" in response.content.decode()
    just_deep: Any = "x"
    for _ in range(200):
        just_deep = {"k": just_deep}
    rule = {**RULES[0], "id": "deep.rule", "description": just_deep}
    response = client.post("/safety/policies/default/rules/", {"definition": json.dumps(rule)})
    assert response.status_code == 400
    assert PolicyRule.objects.count() == before
