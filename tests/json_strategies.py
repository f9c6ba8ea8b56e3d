"""Hypothesis strategies for JSON values that reach the edges of every encoder and decoder."""

from __future__ import annotations

from hypothesis import strategies as st

# every code point, lone surrogates included (JSON's \ud800 escapes decode to them)
any_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=6)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
# integers past 64 bits too: orjson refuses to write them and turns them into floats on reading
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | finite_floats
    | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=30,
)
