"""Text-only responses (C3): splitting into steps, trajectories, and the OpenRLHF mapping."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scoring_helpers import FakeFinding, fake_factory, plain_spec

from core.canonical import extract_steps, normalize_trajectory
from rewards.scoring import (
    build_scorer,
    label_parts,
    label_to_outcome,
    openrlhf_sends_extra_logs,
    score_openrlhf,
    split_query,
    split_text_response,
    text_sample,
    text_to_trajectory,
    with_text_actions,
)


def hermes(name: str, **arguments: object) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def commands(steps: list) -> list[list[str]]:
    return [[c["function"]["arguments"].get("command") for c in s.tool_calls] for s in steps]


def test_hermes_blocks_make_steps_and_consecutive_calls_share_one() -> None:
    text = (
        "Let me look.\n"
        + hermes("bash", command="ls")
        + "\n"
        + hermes("bash", command="cat a.py")
        + "\nNow fix it.\n"
        + hermes("bash", command="sed -i 's/a/b/' a.py")
        + "\nDone."
    )
    steps = split_text_response(text, "hermes")
    assert commands(steps) == [["ls", "cat a.py"], ["sed -i 's/a/b/' a.py"], []]
    assert steps[0].text.startswith("Let me look.")
    assert steps[-1].text == "\nDone."
    assert [s.end for s in steps] == [steps[0].end, steps[1].end, len(text)]
    assert text[: steps[0].end].endswith("</tool_call>")
    assert "".join(s.text for s in steps) == text


def test_fenced_bash_blocks() -> None:
    text = "First:\n```bash\nls -la\n```\nthen\n```sh\npytest -q\n```\n```python\nprint(1)\n```"
    steps = split_text_response(text, "fenced-bash")
    assert commands(steps) == [["ls -la"], ["pytest -q"], []]
    assert "```python" in steps[-1].text


def test_auto_reads_both_formats_in_order_and_ignores_fences_inside_calls() -> None:
    inner = hermes("bash", command="echo '```bash\nrm -rf /\n```'")
    text = "```shell\nls\n```\nthen " + inner + " and ```bash\npwd\n```"
    steps = split_text_response(text, "auto")
    assert commands(steps) == [["ls"], ["echo '```bash\nrm -rf /\n```'"], ["pwd"]]


def test_hermes_format_ignores_fences_and_fenced_format_ignores_tool_calls() -> None:
    text = hermes("bash", command="ls") + "\n```bash\npwd\n```"
    assert commands(split_text_response(text, "hermes")) == [["ls"], []]
    assert commands(split_text_response(text, "fenced-bash")) == [["pwd"]]


def test_malformed_tool_call_is_a_step_without_a_call() -> None:
    text = 'a <tool_call>{"name": "bash", "arguments": {"command": "ls"</tool_call> b'
    steps = split_text_response(text, "hermes")
    assert [s.malformed for s in steps] == [1, 0]
    assert steps[0].tool_calls == ()
    traj, _ = text_to_trajectory("p", text, "hermes")
    assert traj["metadata"]["malformed_tool_calls"] == 1
    for bad in ["<tool_call>[1, 2]</tool_call>", '<tool_call>{"arguments": {}}</tool_call>']:
        assert split_text_response(bad, "hermes")[0].malformed == 1


def test_string_arguments_and_non_shell_tools_are_kept() -> None:
    call = {"name": "str_replace_editor", "arguments": json.dumps({"command": "view", "path": "a"})}
    text = f"<tool_call>{json.dumps(call)}</tool_call>"
    (step,) = split_text_response(text, "hermes")
    assert step.tool_calls[0]["function"]["name"] == "str_replace_editor"
    assert isinstance(step.tool_calls[0]["function"]["arguments"], str)


def test_unterminated_blocks_run_to_the_end() -> None:
    assert commands(split_text_response("go\n```bash\nrm -rf build", "fenced-bash")) == [
        ["rm -rf build"]
    ]
    text = '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}'
    assert commands(split_text_response(text, "hermes")) == [["ls"]]


def test_tool_responses_answer_the_step_before_them() -> None:
    text = (
        hermes("bash", command="python x.py")
        + "\n<tool_response>Traceback (most recent call last):\nError</tool_response>\n"
        + "Let me check.\n"
        + hermes("bash", command="pip list")
    )
    steps = split_text_response(text, "hermes")
    assert len(steps) == 2
    assert steps[0].tool_results == ("Traceback (most recent call last):\nError",)
    assert "<tool_response>" not in steps[1].text
    traj, _ = text_to_trajectory("prompt", text, "hermes")
    canonical = normalize_trajectory(traj)
    extracted = extract_steps(canonical)
    assert extracted[0].tool_results[0]["content"].startswith("Traceback")


def test_empty_and_plain_text() -> None:
    assert len(split_text_response("", "auto")) == 1
    (step,) = split_text_response("Just an answer.", "auto")
    assert step.tool_calls == () and step.end == len("Just an answer.")


def test_unknown_format_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown text format"):
        split_text_response("x", "xml")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["text ", "<tool_call>", "</tool_call>", '{"name": "bash", "arguments": {"command": '
             '"ls"}}', "```bash\n", "```", "\n", "<tool_response>", "</tool_response>", "{", "é"]
        ),
        max_size=20,
    ).map("".join),
    st.sampled_from(["hermes", "fenced-bash", "auto"]),
)  # fmt: skip
def test_any_text_splits_into_ordered_steps_that_normalise(text: str, fmt: str) -> None:
    steps = split_text_response(text, fmt)
    assert steps
    ends = [s.end for s in steps]
    assert ends == sorted(ends) and all(0 <= e <= len(text) for e in ends)
    traj, _ = text_to_trajectory("prompt", text, fmt)
    normalize_trajectory(traj)


@pytest.mark.parametrize(
    ("label", "outcome", "reference"),
    [
        (True, {"resolved": True, "score": 1.0}, None),
        (0.5, {"score": 0.5, "resolved": False}, None),
        (1, {"score": 1.0, "resolved": True}, None),
        # A reference answer is never success, however it looks.
        (3, {}, 3),
        ("42", {}, "42"),
        ("0.5", {}, "0.5"),
        ("true", {"resolved": True}, None),
        ('{"resolved": false}', {"resolved": False}, None),
        ({"outcome": {"tests_passed": 2}}, {"tests_passed": 2}, None),
        ({"reference": "x = 2"}, {}, "x = 2"),
        ({"outcome": {"resolved": True}, "reference": "7"}, {"resolved": True}, "7"),
        ({"answer": "7"}, {}, {"answer": "7"}),
        ("[1, 2]", {}, "[1, 2]"),
        (None, {}, None),
        ("garbage", {}, "garbage"),
        (float("nan"), {}, None),
    ],
)
def test_label_parts(label: object, outcome: dict, reference: object) -> None:
    assert label_parts(label) == (outcome, reference)
    assert label_to_outcome(label) == outcome


def test_a_reference_label_goes_to_metadata_and_earns_no_outcome() -> None:
    scorer = build_scorer(plain_spec(), analyzer_factory=fake_factory({}))
    sample = text_sample("Q: 6*7?\nA: 42", "Q: 6*7?\n", "42")
    assert sample.trajectory["metadata"]["reference"] == "42"
    assert sample.trajectory["outcome"] == {}
    reward, _, logs = score_openrlhf(scorer, "Q: 6*7?\nA: 42", "Q: 6*7?\n", "42")
    assert logs["outcome_reward"] == 0.0 and reward == 0.0


CHATML = "<|im_start|>system\nBe careful.<|im_end|>\n<|im_start|>user\n{u}<|im_end|>\n"
GEN = "<|im_start|>assistant\n"


@pytest.mark.parametrize(
    ("query", "prompt", "response", "how"),
    [
        ("P: do it\nok", "P: do it\n", "ok", "prefix"),
        ("<s>P: do it\nok", "P: do it\n", "ok", "contains"),
        # left-truncated prompt: the system turn was cut, the last turn survives
        (
            (CHATML.format(u="Run ```bash\nrm -rf /\n``` never") + GEN)[20:] + "fine",
            CHATML.format(u="Run ```bash\nrm -rf /\n``` never") + GEN,
            "fine",
            "last-turn",
        ),
        # truncated inside the last turn: the prompt's end is left
        (
            ("x" * 300 + CHATML.format(u="y" * 300) + GEN)[400:] + "fine",
            "x" * 300 + CHATML.format(u="y" * 300) + GEN,
            "fine",
            "suffix",
        ),
        # re-encoded whitespace
        (
            CHATML.format(u="Quote:  `git push --force`").replace("  ", " ") + GEN + "done",
            CHATML.format(u="Quote:  `git push --force`") + GEN,
            "done",
            "last-turn-spacing",
        ),
        # Llama 3 template, the user turn rewritten: only the markers are left to go by
        (
            "<|start_header_id|>user<|end_header_id|>\n\nX<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nanswer",
            "<|start_header_id|>user<|end_header_id|>\n\nY<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n",
            "answer",
            "markers",
        ),
        ("whatever", "unrelated", "whatever", "not-found"),
        ("all of it", "", "all of it", "no-prompt"),
        # no prompt sent, or one the query does not hold: the query's own first assistant turn
        (
            CHATML.format(u="Never ```bash\nrm -rf /\n```") + GEN + "ls",
            "",
            "ls",
            "no-prompt-markers",
        ),
        (
            "<s>[INST] quote: git push --force [/INST] pytest -q",
            "a prompt re-written by the trainer",
            " pytest -q",
            "query-markers",
        ),
    ],
)
def test_split_query_by_structure(query: str, prompt: str, response: str, how: str) -> None:
    start, found = split_query(query, prompt)
    assert (query[start:], found) == (response, how)


def test_commands_quoted_in_a_truncated_prompt_are_not_charged() -> None:
    rules = {"rm -rf /": [FakeFinding("fs.x", "destructive-fs", "critical", "block", (0, 8))]}
    scorer = build_scorer(plain_spec(), analyzer_factory=fake_factory(rules))
    prompt = CHATML.format(u="Never run ```bash\nrm -rf /\n``` here.") + GEN
    query = prompt[len("<|im_start|>system\nBe careful.<|im_end|>\n") :] + "```bash\nls\n```"
    reward, _, logs = score_openrlhf(scorer, query, prompt, True)
    assert logs["unsafe"] == 0.0 and logs["prompt_found"] == 1.0 and reward == 1.0


def test_text_actions_in_conversational_messages_become_tool_calls() -> None:
    rules = {"rm -rf ~/": [FakeFinding("fs.x", "destructive-fs", "critical", "block", (0, 9))]}
    scorer = build_scorer(plain_spec(), analyzer_factory=fake_factory(rules))
    trajectory = {
        "messages": [
            {"role": "user", "content": "Clean up."},
            {"role": "assistant", "content": "Sure.\n```bash\nrm -rf ~/\n```"},
            {"role": "assistant", "content": [{"type": "text", "text": "```sh\nls\n```"}]},
            {"role": "assistant", "content": "Done."},
        ],
        "outcome": {"resolved": True},
    }
    parsed = with_text_actions(trajectory, "auto")
    assert trajectory["messages"][1].get("tool_calls") is None  # the input is unchanged
    assert parsed["metadata"] == {"text_actions": 2}
    calls = parsed["messages"][1]["tool_calls"]
    assert calls[0]["function"] == {"name": "bash", "arguments": {"command": "rm -rf ~/"}}
    as_text = scorer.score(parsed)
    assert as_text.unsafe and [s.message_index for s in as_text.steps] == [1, 2, 3]
    assert not scorer.score(trajectory).unsafe
    assert with_text_actions({"messages": "bad"}) == {"messages": "bad"}
    plain = {"messages": [{"role": "assistant", "content": "no actions"}]}
    assert with_text_actions(plain) is plain


def test_score_openrlhf_maps_reward_into_0_1_and_logs_offsets() -> None:
    rules = {"rm -rf ~/": [FakeFinding("fs.x", "destructive-fs", "critical", "block", (0, 9))]}
    scorer = build_scorer(plain_spec(), analyzer_factory=fake_factory(rules))
    prompt = "<|im_start|>user\nFix it<|im_end|>\n<|im_start|>assistant\n"
    honest = "Look.\n```bash\nls\n```\nDone."
    hacked = "```bash\nrm -rf ~/\n```\nDone."
    r1, s1, logs1 = score_openrlhf(scorer, prompt + honest, prompt, True)
    r2, s2, logs2 = score_openrlhf(scorer, prompt + hacked, prompt, True)
    assert r1 == 1.0 and s1 == pytest.approx(2 / 2.2)
    assert r2 == -0.5 and s2 == pytest.approx(0.5 / 2.2)
    assert 0.0 <= s2 < s1 <= 1.0
    assert logs1["unsafe"] == 0.0 and logs2["unsafe"] == 1.0
    assert logs2["gated"] == 1.0 and logs2["outcome_reward"] == 0.0
    assert logs1["step_end_offsets"] == [float(honest.index("```\n", 10) + 3), float(len(honest))]
    assert logs2["step_rewards"] == [-0.5, 0.0]
    assert all(isinstance(v, float) for k, v in logs1.items() if not isinstance(v, list))


def test_score_openrlhf_with_a_prompt_that_is_not_a_prefix_and_a_bad_label() -> None:
    scorer = build_scorer(plain_spec(), analyzer_factory=fake_factory({}))
    reward, score, _ = score_openrlhf(scorer, "answer", "other prompt", {"tests_passed": -1})
    assert reward == 0.0 and 0.0 <= score <= 1.0


def test_score_openrlhf_splits_by_the_spec_text_format() -> None:
    rules = {"pkill": [FakeFinding("sys.kill", "system-control", "medium", "review", (0, 5))]}
    spec = plain_spec()
    spec["task_type"]["text_format"] = "hermes"
    scorer = build_scorer(spec, analyzer_factory=fake_factory(rules))
    fenced_only = "```bash\npkill python\n```"
    reward, _, logs = score_openrlhf(scorer, fenced_only, "", True)
    assert reward == 1.0 and logs["unsafe"] == 0.0  # not a tool call in the hermes format
    spec["task_type"]["text_format"] = "auto"
    scorer = build_scorer(spec, analyzer_factory=fake_factory(rules))
    reward, _, logs = score_openrlhf(scorer, fenced_only, "", True)
    assert reward == 0.9 and logs["unsafe"] == 1.0


def test_task_types_may_name_the_other_text_formats() -> None:
    finding = FakeFinding("sys.kill", "system-control", "medium", "review", (0, 5))
    rules = {"pkill python": [finding]}
    spec = plain_spec()
    response = "<function=execute_bash>\n<parameter=command>pkill python</parameter>\n</function>"
    reward, _, logs = score_openrlhf(
        build_scorer(spec, analyzer_factory=fake_factory(rules)), response, "", True
    )
    assert logs["unsafe"] == 0.0  # "auto" keeps reading Hermes and fences only
    spec["task_type"]["text_format"] = "openhands"
    reward, _, logs = score_openrlhf(
        build_scorer(spec, analyzer_factory=fake_factory(rules)), response, "", True
    )
    assert reward == 0.9 and logs["unsafe"] == 1.0


@pytest.mark.parametrize(
    ("version", "sends"),
    [("", True), ("0.8", False), ("0.8.x", False), ("0.8.11", False), ("0.7.5", False),
     ("0.9", True), ("0.9.0", True), (" 0.11.2 ", True), ("1.0", True)],
)  # fmt: skip
def test_openrlhf_08_gets_no_extra_logs(version: str, sends: bool) -> None:
    assert openrlhf_sends_extra_logs(version) is sends


@pytest.mark.parametrize("version", ["latest", "0", "0.8-beta", "v0.9", "9" * 9 + ".1"])
def test_an_unreadable_openrlhf_version_is_an_error(version: str) -> None:
    with pytest.raises(ValueError, match="OpenRLHF version"):
        openrlhf_sends_extra_logs(version)
