"""Checking a policy's examples: each rule flags its ``must_match`` commands and none of its
``must_not_match`` ones, when they are run through a real ``Analyzer``.

A step of publishing a policy, not of parsing one: ``Policy.from_dict`` cannot run commands
(the analyzer sits above it), so whoever makes a policy live calls ``check_examples``: the
service when a rule is saved or a version published, and ``load_default_policy`` once per
process for the built-in policy. The top of the analyzer's chain of modules.
"""

from __future__ import annotations

import functools

from .config import AnalyzerConfig
from .engine import Analyzer
from .policy import Policy, PolicyError, parse_default_policy


def check_examples(policy: Policy) -> dict[str, list[str]]:
    """Every failing example by path (``rules[3].examples.must_match[0]``, as ``PolicyError``
    names paths), with a sentence naming the rule and the command; empty when all hold."""
    # No time bound: whether an example holds must not depend on the machine's load.
    analyzer = Analyzer(policy, AnalyzerConfig(cache_size=0, command_seconds=0))
    errors: dict[str, list[str]] = {}
    for i, rule in enumerate(policy.rules):
        for kind in ("must_match", "must_not_match"):
            for j, cmd in enumerate(rule.examples.get(kind, [])):
                got = {f.rule for f in analyzer.analyze(cmd).findings}
                hit = rule.id in got
                if hit != (kind == "must_match"):
                    verb = "does not trigger" if kind == "must_match" else "triggers"
                    errors.setdefault(f"rules[{i}].examples.{kind}[{j}]", []).append(
                        f"rule {rule.id}: example {cmd!r} {verb} it"
                    )
    return errors


@functools.lru_cache(maxsize=1)
def load_default_policy() -> Policy:
    """The built-in default policy, its examples checked once per process (PolicyError if not)."""
    policy = parse_default_policy()
    errors = check_examples(policy)
    if errors:
        raise PolicyError(errors)
    return policy
