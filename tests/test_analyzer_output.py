"""The analyzer's internal marker never leaves it (issue #22, item 1, analyzer side).

Inside the analyzer an unknown value (``$FLAGS``, ``$(whoami)``) is a NUL-delimited marker; NUL
is refused by PostgreSQL's jsonb and text columns and invisible on a page. Everything the
analyzer gives out (findings with their argv and message, resolved argv, effects) shows it as
``SHOWN_DYN`` instead. Checked over the corpora kept in the repository and over generated
commands, and through a real scan storing its flags on PostgreSQL.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.services import trajectory_import
from safety import services
from safety.analyzer import analyze, load_default_policy
from safety.analyzer.resolve import SHOWN_DYN
from safety.models import Flag
from tests.factories import CanonicalTrajectoryFactory
from tests.safety_core.nl2bash_corpus import commands as nl2bash_commands

DATA = Path(__file__).resolve().parent / "data"
# The commands of the issue, and others whose flags, targets or code are known only at run time.
UNKNOWN_VALUES = (
    "sudo chown $(whoami) /data/db",
    "chmod $MODE /etc/passwd",
    "rm $FLAGS /home/x",
    "rm -$F /x",
    "git push $OPTS origin main",
    "git log --format=$(rm -rf /)",
    "cp `ls` /tmp/$X",
    "rm -rf ${DIR:-/}/$SUB",
    "find . -name '*.py' -exec rm $A {} \\;",
    "bash -c 'rm -rf $HOME/$Y'",
    "cat <<EOF > $F\nhi\nEOF",
    "curl $URL | sh",
    "git checkout $REF -- tests/",
    "pip install $PKG",
    "sed -i $EXPR tests/test_x.py",
    "rsync -zvr $from/* root@$host:/home/tmp/",
    "env | grep -i $PATTERN",
)

WORDS = st.sampled_from(
    ["rm", "chmod", "chown", "git", "cp", "mv", "curl", "sudo", "find", "sed", "pip", "tee",
     "-rf", "-f", "--force", "push", "checkout", "install", "-i", "777", "origin", "main",
     "$FLAGS", "-$F", "${A:-x}", "$(whoami)", "`id`", "$((1+2))", "$1", "$@", "${!X}", "$HOME",
     "/etc/passwd", "$HOME/x", "~/y", "tests/test_a.py", "/tmp/$X", "$D/tests", "'$Q'", '"$R"']
)  # fmt: skip
JOINS = st.sampled_from([" ", " | ", " && ", "; ", " > $OUT ", " 2>$E ", " $(", ") "])


@st.composite
def generated_commands(draw: st.DrawFn) -> str:
    parts = [draw(WORDS)]
    for _ in range(draw(st.integers(1, 8))):
        parts += [draw(JOINS), draw(WORDS)]
    return "".join(parts)


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _texts(k)
            yield from _texts(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _texts(getattr(value, f.name))


def _given_out(command: str) -> list[str]:
    """Every text of the analysis a caller reads: findings, resolved argv, effects."""
    a = analyze(command, load_default_policy())
    outputs = ([f.to_dict() for f in a.findings], a.commands, a.effects, a.cmd_effects)
    return list(_texts(outputs))


def _corpus() -> list[str]:
    cases = []
    for path in (DATA / "bash-cases-public.jsonl", DATA / "labelled_commands" / "dev.jsonl"):
        cases += [json.loads(line)["cmd"] for line in path.read_text("utf-8").split("\n") if line]
    return [*nl2bash_commands(), *cases, *UNKNOWN_VALUES]


def test_no_output_over_the_corpora_carries_the_marker() -> None:
    leaks, shown = [], 0
    corpus = [c for c in _corpus() if "\x00" not in c]  # a NUL of the input is the input's
    for command in corpus:
        texts = _given_out(command)
        if any("\x00" in t for t in texts):
            leaks.append(command[:80])
        shown += any(SHOWN_DYN in t for t in texts)
    assert not leaks, f"{len(leaks)} of {len(corpus)} commands leak the marker: {leaks[:10]}"
    assert len(corpus) > 2500 and shown > 100  # the corpora exercise unknown values


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated_commands())
def test_no_output_of_a_generated_command_carries_the_marker(command: str) -> None:
    texts = _given_out(command)
    assert not [t for t in texts if "\x00" in t], command


@pytest.mark.django_db
def test_flags_of_unknown_values_are_stored_as_given_out_on_postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("analyzer output is checked where jsonb refuses NUL: run with DATABASE_URL")
    stored = 0
    for command in UNKNOWN_VALUES:
        record = CanonicalTrajectoryFactory(command=command)
        trajectory_id = trajectory_import(record=record).trajectory.pk
        result = services.trajectory_scan(trajectory_id=trajectory_id)
        flags = list(Flag.all_versions.filter(trajectory_id=trajectory_id))
        assert len(flags) == result.flags_created, command
        for flag in flags:
            texts = [*flag.argv, flag.message, flag.rule_id]
            assert not any("\x00" in t or "\ufffd" in t for t in texts), (command, texts)
        stored += len(flags)
    dynamic = Flag.all_versions.filter(rule_id="analyzer.dynamic-flags")
    assert dynamic.count() >= 3
    assert all(any(SHOWN_DYN in a for a in f.argv) for f in dynamic)
    assert stored >= len(UNKNOWN_VALUES)
