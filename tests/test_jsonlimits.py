"""jsonlimits.depth_exceeds against a plain recursive definition of nesting depth."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rewardhub.jsonlimits import depth_exceeds

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=2), inner, max_size=4)
        | st.tuples(inner, inner)
    ),
    max_leaves=40,
)


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list | tuple):
        return 1 + max(map(depth, value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(json_values, st.integers(min_value=0, max_value=12))
def test_depth_exceeds_is_depth_over_the_limit(value: Any, limit: int) -> None:
    assert depth_exceeds(value, limit) == (depth(value) > limit)


def test_a_deep_chain_beside_shallow_siblings() -> None:
    chain: Any = []
    for _ in range(50):
        chain = [chain, {"a": 1}, "x"]
    # the dict, 50 wrapping lists and the innermost empty list: 52 levels
    assert depth({"k": chain}) == 52
    assert depth_exceeds({"k": chain}, 52) is False
    assert depth_exceeds({"k": chain}, 51) is True
    assert depth_exceeds("leaf", 0) is False
    assert depth_exceeds([], 0) is True
