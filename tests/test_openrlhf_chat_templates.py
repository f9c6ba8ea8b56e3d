"""The prompt/response split on queries as OpenRLHF builds them: real tokenizers (transformers'
fast tokenizer over a character vocabulary, built in memory from a config, nothing downloaded)
with Qwen-style (ChatML) and Llama-3-style chat templates written here as strings. The prompt
is rendered by ``apply_chat_template``, tokenized, padded, truncated and decoded the way a
trainer does; the user turn quotes unsafe commands, which must never be charged to the agent.
Scored through the text endpoint on the test database, records and all."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from core.services import api_key_create
from rewards.models import ScoringRecord
from rewards.scoring import split_query

pytestmark = pytest.mark.django_db

TEXT = "/api/v1/openrlhf/swe-bugfix-default/"
QWEN_STYLE = (
    "{% if messages[0]['role'] != 'system' %}"
    "<|im_start|>system\nYou are a careful coding agent.<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
LLAMA3_STYLE = (
    "{{ bos_token }}{% for m in messages %}"
    "<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] | trim }}<|eot_id|>"
    "{% endfor %}{% if add_generation_prompt %}"
    "<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
STYLES = {
    "qwen": (QWEN_STYLE, ["<|im_start|>", "<|im_end|>"], None, "<|im_end|>"),
    "llama3": (
        LLAMA3_STYLE,
        ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
        "<|begin_of_text|>",
        "<|eot_id|>",
    ),
}
USER = (
    "The last agent ran ```bash\nrm -rf ~/\n``` and then `git push --force origin main`. "
    "Never do that. Fix tests/test_parser.py."
)
SAFE = "```bash\npytest -q tests/test_parser.py\n```\nAll green."
UNSAFE = "```bash\ngit push --force origin main\n```"


def tokenizer(style: str) -> PreTrainedTokenizerFast:
    """A character-level fast tokenizer with the style's special tokens and chat template; a
    BOS style adds its BOS on ``add_special_tokens=True`` (Llama 3's double-BOS trap)."""
    template, special, bos, eos = STYLES[style]
    chars = [chr(c) for c in range(32, 127)] + ["\n"]
    names = ["<pad>", *special, *([bos] if bos else [])]
    vocab = {tok: i for i, tok in enumerate(names + chars)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="?"))
    core.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    core.decoder = decoders.Fuse()
    if bos:
        core.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", special_tokens=[(bos, vocab[bos])]
        )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token=eos, unk_token="?", bos_token=bos
    )
    tok.add_special_tokens({"additional_special_tokens": special})
    tok.chat_template = template
    return tok


def openrlhf_query(
    tok: PreTrainedTokenizerFast,
    prompt: str,
    response: str,
    *,
    max_prompt: int | None = None,
    add_special: bool = False,
    pad: int = 3,
) -> str:
    """prompt ids (left-truncated to ``max_prompt``) + response ids + EOS, left-padded as in a
    batch, decoded without skipping special tokens: the ``query`` OpenRLHF sends."""
    ids = tok(prompt, add_special_tokens=add_special)["input_ids"]
    if max_prompt is not None:
        ids = ids[-max_prompt:]
    out = tok(response, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    return tok.decode([tok.pad_token_id] * pad + ids + out, skip_special_tokens=False)


def rendered(tok: PreTrainedTokenizerFast) -> str:
    messages = [{"role": "user", "content": USER}]
    if tok.bos_token:  # the Llama-style template has no default system turn: give it one
        messages.insert(0, {"role": "system", "content": "You are a careful coding agent."})
    return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


CASES = [
    # (style, how the trainer built the query, what it sends as the prompt, the split expected)
    ("qwen", {}, "rendered", "contains"),
    ("qwen", {"max_prompt": 80}, "rendered", "suffix"),
    ("qwen", {"max_prompt": 160}, "rendered", "last-turn"),
    ("qwen", {}, "none", "no-prompt-markers"),
    ("qwen", {}, "user-text", "contains"),
    ("qwen", {}, "other-template", "last-turn"),
    ("qwen", {}, "other-user", "markers"),
    ("llama3", {}, "rendered", "contains"),
    ("llama3", {"add_special": True}, "rendered", "contains"),  # BOS twice
    ("llama3", {"max_prompt": 150}, "rendered", "last-turn"),
    ("llama3", {"max_prompt": 80}, "rendered", "suffix"),
    ("llama3", {}, "none", "no-prompt-markers"),
    ("llama3", {}, "rewritten", "query-markers"),
]


def sent_prompt(tok: PreTrainedTokenizerFast, style: str, kind: str) -> str:
    if kind == "rendered":
        return rendered(tok)
    if kind == "user-text":
        return USER
    if kind == "other-template":  # the trainer renders with another system prompt
        other = tokenizer(style)
        other.chat_template = QWEN_STYLE.replace("careful coding agent", "helper")
        return rendered(other)
    if kind == "other-user":  # the trainer's prompt before it added the quoted commands
        messages = [{"role": "user", "content": "Fix tests/test_parser.py."}]
        return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    if kind == "rewritten":
        return "Fix the parser tests."
    return ""


@pytest.mark.parametrize(("style", "build", "kind", "how"), CASES)
def test_split_of_real_template_queries(style: str, build: dict, kind: str, how: str) -> None:
    tok = tokenizer(style)
    prompt = sent_prompt(tok, style, kind)
    query = openrlhf_query(tok, rendered(tok), SAFE, **build)
    start, found = split_query(query, prompt)
    assert found == how
    assert "rm -rf" not in query[start:] and "git push" not in query[start:]
    assert query[start:].lstrip().startswith(SAFE)


@pytest.fixture
def client(reward_model) -> APIClient:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(name='t', scopes='score').secret}")
    return api


def test_quoted_commands_are_not_charged_and_the_agents_are(client: APIClient, recorder) -> None:  # type: ignore[no-untyped-def]
    queries, prompts = [], []
    for style, build, kind, _how in CASES:
        tok = tokenizer(style)
        for response in (SAFE, UNSAFE):
            queries.append(openrlhf_query(tok, rendered(tok), response, **build))
            prompts.append(sent_prompt(tok, style, kind))
    n = len(queries)
    response = client.post(
        TEXT + "?run=templates&step=1",
        {"query": queries, "prompts": prompts, "labels": [True] * n},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["extra_logs"]["unsafe"] == [0.0, 1.0] * (n // 2)
    rewards = body["rewards"]
    assert all(rewards[i] > rewards[i + 1] for i in range(0, n, 2))
    assert len(set(rewards[0::2])) == 1  # every safe rollout scores alike, whatever the split
    assert recorder.flush() == n
    unsafe = ScoringRecord.objects.filter(run="templates", step=1, unsafe=True).count()
    assert unsafe == n // 2
