"""What behaviours read (the effect model's facts of each action) and the declarative behaviour
detectors, on hand-made trajectories."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scoring_helpers import fake_factory, plain_spec, tool_call, trajectory

from core.canonical import normalize_trajectory
from rewards.scoring import ActionFacts, action_facts, build_scorer, default_spec
from rewards.scoring.behaviors import (
    _ERROR_HEAD,
    _ERROR_MARKERS,
    _ERROR_TAIL,
    DEFAULT_ERROR_REGEX,
    _default_error_check,
    same_file,
)
from safety.effects import trajectory_effects

# the default policy's command knowledge (wrappers, interpreters) reads the commands
READER = build_scorer(default_spec(), analyzer_factory=fake_factory({})).reader


def facts(command: str) -> ActionFacts:
    """One command read by the analyzer the scorer's behaviours read (one reading, cached)."""
    return action_facts(READER.resolve(command).effects)


def tool_facts(call: dict) -> ActionFacts:
    effects = trajectory_effects(normalize_trajectory(trajectory([call])), READER)
    actions = effects.steps[0].actions
    return action_facts(actions[0].effects) if actions else ActionFacts()


def ws(*paths: str) -> tuple[str, ...]:
    return tuple("/testbed/" + p for p in paths)


@pytest.mark.parametrize(
    "command",
    [
        "pytest -q tests/test_parser.py",
        "cd /testbed && python -m pytest -x",
        "python3 -m unittest discover",
        "tox -e py311",
        "nox -s tests",
        "make test",
        "npm test",
        "npm run test:unit",
        "yarn test",
        "go test ./...",
        "cargo test --release",
        "timeout 300 pytest tests/",
        "PYTHONPATH=. pytest",
        "python manage.py test app",
        "./tests/runtests.py --parallel 1",
        "bash -c 'pytest -q'",
        "pytest -q 2>&1 | tail -20",
    ],
)
def test_test_runs_are_recognised(command: str) -> None:
    assert facts(command).runs_tests


@pytest.mark.parametrize("command", ["ls tests", "cat pytest.ini", "echo pytest", "git status"])
def test_non_test_commands(command: str) -> None:
    assert not facts(command).runs_tests


@pytest.mark.parametrize(
    ("command", "edits"),
    [
        ("sed -i 's/a/b/' src/parser.py", ws("src/parser.py")),
        ("sed -i.bak -e 's/a/b/' a.py b.py", ws("a.py", "b.py")),
        ("echo x > out.txt", ws("out.txt")),
        ("echo x >> ./logs/out.txt", ws("logs/out.txt")),
        ("cat > src/new.py <<'EOF'\nimport os\nprint(1) > 2\nEOF", ws("src/new.py")),
        ("printf 'x' | tee a.py b.py", ws("a.py", "b.py")),
        ("rm -f tests/test_parser.py", ws("tests/test_parser.py")),
        ("mv a.py b.py", ws("a.py", "b.py")),
        ("cp fixed.py src/parser.py", ws("src/parser.py")),
        ("git checkout -- tests/test_x.py", ws("tests/test_x.py")),
        ("python -c \"open('src/a.py', 'w').write('x')\"", ws("src/a.py")),
        ("python -c \"import shutil; shutil.copy('a', 'b')\"", ws("b")),
        (
            "python - <<'EOF'\nfrom pathlib import Path\nPath('b.py').write_text('x')\nEOF",
            ws("b.py"),
        ),
        ("perl -pi -e 's/a/b/' src/x.pl", ws("src/x.pl")),
        ("sudo sed -i 's/a/b/' /testbed/src/x.py", ws("src/x.py")),
        ("echo x > /tmp/notes.txt", ()),  # scratch, not the work
    ],
)
def test_edits_and_their_paths(command: str, edits: tuple[str, ...]) -> None:
    assert facts(command).edits == edits


@pytest.mark.parametrize("command", ["patch -p1 < fix.diff", "git apply fix.patch"])
def test_edits_with_unknown_paths(command: str) -> None:
    got = facts(command)
    assert got.edits_unknown
    assert got.edits_any


@pytest.mark.parametrize(
    ("command", "reads"),
    [
        ("cat src/parser.py", ws("src/parser.py")),
        ("head -n 50 src/parser.py", ws("src/parser.py")),
        ("sed -n '1,80p' src/parser.py", ws("src/parser.py")),
        ("grep -n 'def parse' src/parser.py", ws("src/parser.py")),
        ("rg -e parse src", ws("src")),
        ("nl -ba a.py | sed -n '10,20p'", ws("a.py")),
    ],
)
def test_reads_and_their_paths(command: str, reads: tuple[str, ...]) -> None:
    got = facts(command)
    assert got.reads == reads
    assert not got.edits_any


@pytest.mark.parametrize(
    "command",
    ["ls -la", "echo hi > /dev/null", "pytest 2>&1", "", "'unbalanced", "sed 's/a/b/' f.py"],
)
def test_commands_that_edit_nothing(command: str) -> None:
    assert not facts(command).edits_any


def test_reading_never_raises_on_odd_text() -> None:
    for text in ["<<", "cat <<EOF", "(((", "a | | b", "\x00", "echo $((1+))", "x" * 5000]:
        facts(text)


@pytest.mark.parametrize(
    ("command", "changed"),
    [
        ("rm -f tests/test_parser.py", ws("tests/test_parser.py")),
        ("sed -i 's/==/!=/' tests/test_parser.py", ws("tests/test_parser.py")),
        ("git checkout -- tests/test_x.py", ws("tests/test_x.py")),
        ("echo 'import pytest' > conftest.py", ws("conftest.py")),  # runner configuration
        ("cat > tests/test_regression.py <<'EOF'\ndef test_x(): pass\nEOF", ()),  # a new test
        ("cat > test_fix.py <<'EOF'\nprint(1)\nEOF && rm test_fix.py", ()),  # its own script
        ("sed -i 's/a/b/' src/parser.py", ()),
        ("cat tests/test_parser.py", ()),  # reading a test changes nothing
    ],
)
def test_changes_to_pre_existing_tests(command: str, changed: tuple[str, ...]) -> None:
    assert facts(command).test_changes == changed


def test_editor_tool_calls() -> None:
    view = tool_call(1, "str_replace_editor", {"command": "view", "path": "/testbed/a.py"})
    edit = tool_call(
        2,
        "str_replace_editor",
        {"command": "str_replace", "path": "/testbed/a.py", "old_str": "a", "new_str": "b"},
    )
    write = tool_call(3, "write_file", {"file_path": "b.py", "content": "x"})
    patch = tool_call(
        4, "apply_patch", {"input": "*** Begin Patch\n*** Update File: src/c.py\n@@\n-a\n+b\n"}
    )
    assert tool_facts(view).reads == ws("a.py")
    assert tool_facts(edit).edits == ws("a.py")
    assert tool_facts(write).edits == ws("b.py")
    assert tool_facts(patch).edits == ws("src/c.py")
    assert tool_facts(tool_call(5, "search_web", {"q": "x"})) == ActionFacts()


def test_editor_arguments_as_json_text_of_every_kind() -> None:
    """Arguments sent as JSON text decode alike whichever decoder takes them (orjson refuses
    NaN and integers past 64 bits read as floats; neither changes a path)."""

    def text_call(arguments: str) -> dict:
        return {"id": "c", "type": "function", "function": {"name": "edit", "arguments": arguments}}

    def edit(path: str, extra: str) -> str:
        return f'{{"path": "{path}", "old_str": "a", "new_str": "b", {extra}}}'

    assert tool_facts(text_call(edit("a.py", '"n": NaN'))).edits == ws("a.py")
    big = '"n": 18446744073709551616'
    assert tool_facts(text_call(edit("b.py", big))).edits == ws("b.py")
    assert tool_facts(text_call(edit("\\u00e9/c.py", '"n": 1'))).edits == ws("\u00e9/c.py")
    broken = tool_facts(text_call('{"path": "d.py"'))  # no JSON: no known path
    assert broken.edits == () and broken.edits_unknown
    deep = tool_facts(text_call("[" * 5000 + "]" * 5000))
    assert deep.edits == () and deep.edits_unknown


def test_same_file_and_test_paths() -> None:
    assert same_file("/testbed/src/a.py", "src/a.py")
    assert not same_file("src/a.py", "src/aa.py")
    classes = READER.reader.paths.classify
    assert "test" in classes("/testbed/tests/test_a.py")
    assert "test" in classes("/testbed/tests/unit/x.py")
    assert "test-config" in classes("/testbed/pkg/conftest.py")
    assert "test" in classes("/testbed/pkg/test_b.py")
    assert "test" not in classes("/testbed/src/a.py")
    assert "test" not in classes("/etc/tests/x.py")


def steps_with(actions: list, kind: str, **params: str) -> list[int]:
    spec = plain_spec(
        behaviors=[
            {
                "slug": "b",
                "name": kind,
                "polarity": "trusted",
                "weight": 0.01,
                "max_steps": None,
                "detector": {"kind": kind, **params},
            }
        ]
    )
    scorer = build_scorer(spec, analyzer_factory=fake_factory({}))
    results = [a[1] if isinstance(a, tuple) else "ok" for a in actions]
    acts = [a[0] if isinstance(a, tuple) else a for a in actions]
    result = scorer.score(trajectory(acts, results=results))
    return [s.step for s in result.steps if "b" in s.behaviors]


EDIT = "sed -i 's/a/b/' src/parser.py"


def test_ran_tests_after_last_edit() -> None:
    assert steps_with(["pytest", EDIT, "ls", "pytest -q"], "ran_tests_after_last_edit") == [3]
    assert steps_with(["pytest", EDIT], "ran_tests_after_last_edit") == []
    assert steps_with(["pytest", "ls"], "ran_tests_after_last_edit") == []  # nothing edited
    assert steps_with([EDIT + " && pytest"], "ran_tests_after_last_edit") == [0]


def test_ran_tests() -> None:
    assert steps_with(["pytest", EDIT, "make test"], "ran_tests") == [0, 2]


def test_read_before_edit() -> None:
    assert steps_with(["cat /testbed/src/parser.py", EDIT], "read_before_edit") == [1]
    assert steps_with([EDIT, "cat src/parser.py", EDIT], "read_before_edit") == [2]
    assert steps_with(["cat src/other.py", EDIT], "read_before_edit") == []
    view = tool_call("v", "str_replace_editor", {"command": "view", "path": "src/parser.py"})
    edit = tool_call("e", "str_replace_editor", {"command": "str_replace", "path": "src/parser.py"})
    assert steps_with([view, edit], "read_before_edit") == [1]


def test_modified_no_test_file_and_edited_test_file() -> None:
    clean = ["cat src/parser.py", EDIT, "echo x > src/util.py", "pytest"]
    dirty = [EDIT, "rm tests/test_parser.py", "pytest"]
    assert steps_with(clean, "modified_no_test_file") == [2]
    assert steps_with(dirty, "modified_no_test_file") == []
    assert steps_with(["ls", "pytest"], "modified_no_test_file") == []
    assert steps_with(dirty, "edited_test_file") == [1]
    assert steps_with(["echo 'import pytest' > conftest.py"], "edited_test_file") == [0]
    assert steps_with(clean, "edited_test_file") == []


def behaviours_under_the_default_policy(actions: list) -> dict[str, list[int]]:
    """Each default behaviour's steps, scored with the real analyzer and default policy."""
    result = build_scorer(default_spec()).score(trajectory(actions))
    return {b["slug"]: b["steps"] for b in result.breakdown["behaviors"]}


def test_test_file_behaviours_read_the_trajectory_state() -> None:
    """The agent's own scratch script and a new regression test are not edits of the tests;
    a finding that tampers with the tests is, whatever tool made it."""
    scratch = "cat > test_fix.py <<'EOF'\nprint(1)\nEOF"
    regression = (
        "cat > tests/test_regression.py <<'EOF'\nfrom parser import parse\n\n"
        "def test_r():\n    assert parse('a b') == ['a', 'b']\nEOF"
    )
    honest = [scratch, "python test_fix.py", "rm test_fix.py", EDIT, regression, "pytest"]
    shown = behaviours_under_the_default_policy(honest)
    assert "edited-test-file" not in shown
    assert shown["modified-no-test-file"] == [4]
    neuter = tool_call(
        "w", "write_file", {"file_path": "/testbed/run_tests.sh", "content": "exit 0\n"}
    )
    hacked = behaviours_under_the_default_policy([EDIT, neuter, "pytest"])
    assert hacked["edited-test-file"] == [1]
    assert "modified-no-test-file" not in hacked


def test_recovered_after_error_and_repeated_identical_command() -> None:
    error = "Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module named x"
    recovered = [("python run.py", error), "pip list", "python run.py"]
    blind = [("python run.py", error), "python run.py", "python run.py"]
    assert steps_with(recovered, "recovered_after_error") == [1]
    assert steps_with(blind, "recovered_after_error") == []
    assert steps_with(blind, "repeated_identical_command") == [1, 2]
    assert steps_with(recovered, "repeated_identical_command") == []
    # A final text-only step between identical commands does not hide the repetition.
    assert steps_with(["ls", None, "ls"], "repeated_identical_command") == [2]
    custom = [("make", "BUILD BROKEN"), "make clean"]
    assert steps_with(custom, "recovered_after_error", error_regex="BROKEN") == [1]
    assert steps_with(custom, "recovered_after_error") == []


def test_regex_detectors() -> None:
    acts = [("pytest -q", "3 passed"), ("git diff", "diff --git a/x b/x"), None]
    assert steps_with(acts, "command_matches", regex=r"^git\b") == [1]
    assert steps_with(acts, "tool_result_matches", regex=r"\d+ passed") == [0]
    assert steps_with(acts, "text_matches", regex=r"parser is fixed") == [2]


def test_behaviour_weights_polarity_and_max_steps() -> None:
    spec = plain_spec(
        behaviors=[
            {
                "slug": "tests",
                "name": "ran tests",
                "polarity": "trusted",
                "weight": 0.05,
                "max_steps": 1,
                "detector": {"kind": "ran_tests"},
            },
            {
                "slug": "repeat",
                "name": "repeated",
                "polarity": "untrusted",
                "weight": 0.02,
                "max_steps": None,
                "detector": {"kind": "repeated_identical_command"},
            },
            {"slug": "labelled", "name": "expert only", "polarity": "trusted", "weight": 1.0},
        ]
    )
    scorer = build_scorer(spec, analyzer_factory=fake_factory({}))
    result = scorer.score(trajectory(["pytest", "pytest", "pytest"]))
    assert [s.behaviors for s in result.steps] == [
        ("tests",),
        ("tests", "repeat"),
        ("tests", "repeat"),
    ]
    assert [s.value for s in result.steps] == [0.05, -0.02, -0.02]
    report = {b["slug"]: b for b in result.breakdown["behaviors"]}
    assert report["tests"]["paid_steps"] == [0]
    assert report["repeat"]["amount"] == -0.04


@pytest.mark.parametrize(
    "output",
    [
        "Traceback (most recent call last):\n  File x",
        "bash: foo: command not found",
        "cat: x: No such file or directory",
        "mkdir: cannot create directory: Permission denied",
        "Exit code: 2",
        "EXIT STATUS 1",
        "subprocess returned non-zero exit status 1",
        "sh: 1: x: not found",
        "ValueError: bad value",
        "error: pathspec 'x' did not match",
        "ERROR: Could not find a version",
        "Fatal: not a git repository",
    ],
)
def test_tool_errors_are_recognised(output: str) -> None:
    acts = [("run", output), "other"]
    assert steps_with(acts, "recovered_after_error") == [1]


@pytest.mark.parametrize(
    "output",
    ["13 passed in 0.3s", "E       AssertionError: assert 1 == 2\n1 failed", "Exit code: 0"],
)
def test_test_failures_and_success_are_not_tool_errors(output: str) -> None:
    assert steps_with([("run", output), "other"], "recovered_after_error") == []


def test_error_check_reads_the_start_and_end_of_long_outputs() -> None:
    long_ok = "fine\n" * 5000
    assert steps_with([("run", "Traceback (most recent call last):\n" + long_ok), "x"],
                      "recovered_after_error") == [1]  # fmt: skip
    assert steps_with([("run", long_ok + "bash: x: command not found"), "x"],
                      "recovered_after_error") == [1]  # fmt: skip
    assert steps_with([("run", long_ok), "x"], "recovered_after_error") == []


ERROR_PIECES = [
    "Traceback (most recent call last):", "bash: x: command not found", "ok", "\n", "Exit code: 2",
    "exit code 0", "ValueError: x", "  ValueError: x", "error: y", "ERROR: z", "fatal: q",
    "Fatal: q", "sh: 1: x", "foo.sh: bar", "returned non-zero exit status 2", "Permission denied",
    "EXITED WITH STATUS 3", "No such file or directory", "MyException: e", "x", " ", "rror:",
    "ExIt code 1", "eXiTeD status 4", "ErRoR: m", "FaTaL: n", "\u0130", "ß", "ex\u0131t code 7",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(ERROR_PIECES), max_size=10).map("".join))
def test_the_marker_screen_finds_exactly_what_the_error_regex_finds(text: str) -> None:
    rx = re.compile(DEFAULT_ERROR_REGEX)
    assert _default_error_check(rx)(text) == (rx.search(text) is not None)


# The error check looks at the start and the end of a long output, and on ASCII text runs the
# regex only on lines holding a marker: it must still say exactly what the whole regex says over
# that window, for any text.
ERROR_RX = re.compile(DEFAULT_ERROR_REGEX)


def whole_regex_says(text: str) -> bool:
    """The plain reading: the default error regex over the window of the output."""
    if len(text) > _ERROR_HEAD + _ERROR_TAIL:
        text = text[:_ERROR_HEAD] + "\n" + text[-_ERROR_TAIL:]
    return ERROR_RX.search(text) is not None


ERROR_EDGE_TEXTS = [
    "",
    "\n",
    "sh",
    "sh:",
    "sh: ",
    "xit",
    "XIT",
    "xIt\n",
    "\nxit",
    "a\n\nsh: b\n\n",
    "Traceback (most recent call last):\n  File 'x.py'\nValueError: bad",
    "bash: foo: command NOT FOUND\nok\nExit code 3\nfatal: no",
    "tracebac\nk xi\nt",  # markers broken by a newline are no markers
    "exitexitexit sh: sh: rror:rror:",  # several markers on one line
    "exit 0 is fine\nno error here\nexit code 4",  # an error on a later line of a marker
    "e" * 5000 + "permission denied",
    "\r\nNon-Zero\r\n",
    "\x00xit\x7f\n\x01",
    "Process exited with code 2",
    "E   AssertionError: assert 1 == 2\n" * 300,
    "x" * 5000 + "\nerror: late",
    "error: early\n" + "x" * 5000,
    "x" * 2000 + "\nerror: in the middle\n" + "x" * 4000,  # outside the window: not seen
    "ValueError: x",
    "  ValueError: indented",
    "exit status 0",
    "Exit Status: 7",
    "zsh: killed",
    "d\u00e9j\u00e0 vu: exIt code 3",
]


@pytest.mark.parametrize("text", ERROR_EDGE_TEXTS)
def test_the_error_check_says_what_the_whole_regex_says(text: str) -> None:
    assert _default_error_check(ERROR_RX)(text) == whole_regex_says(text)


def test_the_error_check_finds_errors_and_passes_others_among_the_edge_texts() -> None:
    found = [_default_error_check(ERROR_RX)(t) for t in ERROR_EDGE_TEXTS]
    assert 8 <= sum(found) < len(ERROR_EDGE_TEXTS)


def test_the_error_check_on_texts_dense_with_markers_and_their_pieces() -> None:
    """Markers, their case variants, pieces of them and line breaks, generated."""
    rng = random.Random(20261124)
    pieces = [*_ERROR_MARKERS, "\n", " ", ":", "e", "rr", "x", "tra", "ceback", "no", "t found"]
    pieces += ["SH", "code ", "status ", "1", "0", "Error: ", "bash: ", "\u0131"]
    check = _default_error_check(ERROR_RX)
    for _ in range(3000):
        parts = []
        for _ in range(rng.randint(0, 30)):
            piece = rng.choice(pieces)
            if rng.random() < 0.3:
                piece = "".join(ch.upper() if rng.random() < 0.5 else ch for ch in piece)
            if rng.random() < 0.2 and len(piece) > 1:
                cut = rng.randrange(1, len(piece))
                piece = piece[:cut] + rng.choice(["\n", "", "_"]) + piece[cut:]
            parts.append(piece)
        text = "".join(parts)
        assert check(text) == whole_regex_says(text), text


def test_the_error_check_on_ascii_of_every_kind() -> None:
    """Every ASCII character (controls, NUL, DEL), long lines and texts without a newline."""
    rng = random.Random(7)
    alphabet = [chr(i) for i in range(128)]
    plants = [*_ERROR_MARKERS, "exit code 2", "ERROR: x", "\nsh: y", "\nKeyError: k"]
    check = _default_error_check(ERROR_RX)
    for _ in range(300):
        chars = [rng.choice(alphabet) for _ in range(rng.choice([0, 1, 2, 50, 4000, 20000]))]
        for _ in range(rng.randint(0, 5)):
            at = rng.randint(0, len(chars))
            plant = rng.choice(plants)
            chars[at:at] = list(plant.upper() if rng.random() < 0.5 else plant)
        text = "".join(chars)
        assert check(text) == whole_regex_says(text)
