"""OpenRLHF's own remote reward request code against the live service: 0.11.2's
SingleTurnAgentExecutor (one request per sample, aiohttp, 5 tries 1 s apart) in a burst of
1,024 samples and across a restart; 0.8.11 and 0.9.0's request_api_wrapper and
update_samples_with_rewards (installed apart, var/frameworks/openrlhf-<version>)."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import report

ROOT = Path(os.environ.get("RH_FW_ROOT", Path(__file__).resolve().parent.parent))
HOST = "127.0.0.1"
PROMPT = "<|im_start|>user\nFix tests/test_parser.py<|im_end|>\n<|im_start|>assistant\n"
SAFE = "```bash\npytest -q tests/test_parser.py\n```"
UNSAFE = "```bash\ngit push --force origin main\n```"


def url(service, run: str, extra: str = "", *, key: str = "user") -> str:  # type: ignore[no-untyped-def]
    """The ``--remote_rm_url``: the key as the URL's user part (``key="user"``, what 0.11's
    aiohttp sends as basic credentials), nowhere (``"netrc"``: 0.8/0.9's requests reads it from
    a netrc file) or as the last path segment (``"path"``)."""
    host = service.url.split("://", 1)[1]
    base = f"http://rewardhub:{service.key}@{host}" if key == "user" else service.url
    tail = f"{service.key}" if key == "path" else ""
    return f"{base}/api/v1/openrlhf/{service.model}/{tail}?run={run}{extra}"


def executor(service, run: str):  # type: ignore[no-untyped-def]
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    return SingleTurnAgentExecutor(remote_rm_url=url(service, run))


class OpenRLHFLog(logging.Handler):
    """Every line OpenRLHF's loggers write (they do not propagate to the root logger)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    def __enter__(self) -> OpenRLHFLog:
        for name in [n for n in logging.root.manager.loggerDict if n.startswith("openrlhf")]:
            logging.getLogger(name).addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        for name in [n for n in logging.root.manager.loggerDict if n.startswith("openrlhf")]:
            logging.getLogger(name).removeHandler(self)


def assert_no_key(service, *texts: str) -> None:  # type: ignore[no-untyped-def]
    for text in texts:
        leaked = [line for line in text.splitlines() if service.key in line]
        assert not leaked, f"the API key is in OpenRLHF's output: {leaked[0][:120]}..."


def test_0112_burst_of_1024_single_sample_requests(service, capfd) -> None:  # type: ignore[no-untyped-def]
    run = f"orl-burst-{uuid.uuid4().hex[:8]}"
    ex = executor(service, run)
    n = 1024

    prompt = PROMPT.replace("test_parser.py", f"test_parser.py ({run})")  # new content

    async def burst() -> list[object]:
        calls = [
            ex._fetch_rewards_via_http(
                [prompt + (UNSAFE if i % 8 == 0 else SAFE)], [prompt], [{"resolved": True}]
            )
            for i in range(n)
        ]
        return await asyncio.gather(*calls, return_exceptions=True)

    t0 = time.monotonic()
    with OpenRLHFLog() as log:
        results = asyncio.run(burst())
    took = time.monotonic() - t0
    assert_no_key(service, *log.lines, *capfd.readouterr())
    lost = [r for r in results if isinstance(r, BaseException)]
    assert not lost, f"{len(lost)} of {n} rewards lost: {lost[:2]}"
    rewards = [r[0]["rewards"][0] for r in results]  # type: ignore[index]
    assert all(isinstance(r, float) for r in rewards)
    assert rewards[0] < rewards[1]  # the force push costs
    assert all(set(r[0]["extra_logs"]) >= {"unsafe", "prompt_found"} for r in results)  # type: ignore[index]
    print(f"\n1,024-sample burst: every reward in {took:.1f} s")
    records = service.records(run, expected=n, wait=30)
    assert len(records) == n and sum(r["unsafe"] for r in records) == n // 8
    flagged = [r for r in records if r["unsafe"]]
    assert service.reviewed(flagged) == {r["scoring_id"] for r in flagged}
    report(
        "OpenRLHF SingleTurnAgentExecutor", openrlhf_version(), samples=n, scored=len(rewards),
        records=records, step=False, routed=len(service.reviewed(records)),
    )  # fmt: skip


def test_0112_survives_a_restart_and_fails_explicitly_when_down(service, capfd) -> None:  # type: ignore[no-untyped-def]
    run = f"orl-restart-{uuid.uuid4().hex[:8]}"
    ex = executor(service, run)
    prompt = PROMPT.replace("test_parser.py", f"test_parser.py ({run})")
    service.stop()
    restarter = threading.Timer(1.5, service.start)
    restarter.start()
    with OpenRLHFLog() as log:
        try:
            got = asyncio.run(ex._fetch_rewards_via_http([prompt + SAFE], [prompt], [True]))
        finally:
            restarter.join()
        assert len(got[0]["rewards"]) == 1  # OpenRLHF's own retries bridged the restart
        service.stop()
        try:
            with pytest.raises(RuntimeError, match="Request error for 5 times"):
                asyncio.run(ex._fetch_rewards_via_http([PROMPT + SAFE], [PROMPT], [True]))
        finally:
            service.start()
        # a wrong key: OpenRLHF logs the 401 of each try
        wrong = SimpleNamespace(url=service.url, model=service.model, key=service.key[:-4] + "zzzz")
        with pytest.raises(RuntimeError, match="Request error for 5 times"):
            asyncio.run(
                executor(wrong, run)._fetch_rewards_via_http([PROMPT + SAFE], [PROMPT], [True])
            )
    errors = [line for line in log.lines if "Request error" in line]
    assert len(errors) >= 10 and any("401" in line for line in errors), log.lines
    assert_no_key(service, *log.lines, *capfd.readouterr())
    assert_no_key(wrong, *log.lines)
    records = service.records(run)
    assert len(records) == 1
    report(
        "OpenRLHF SingleTurnAgentExecutor", openrlhf_version(), samples=2, scored=1,
        records=records, step=False, routed=len(service.reviewed(records)),
        restart="restart within its 5 tries: scored; down: its own RuntimeError after 5 tries",
    )  # fmt: skip


def openrlhf_version() -> str:
    from importlib.metadata import version

    return version("openrlhf")


OLD = """
import sys, types, json
sys.path.insert(0, {here!r})
import gpu_stubs  # DeepSpeed, vLLM ... are imported at the top of these modules, never called
import openrlhf
from openrlhf.utils.remote_rm_utils import request_api_wrapper
from openrlhf.trainer.ppo_utils.experience_maker import update_samples_with_rewards
url, compat, wait = sys.argv[1], sys.argv[2], sys.argv[3] == "wait"
if wait:  # the test stops the service now, and starts it again while this retries
    print("IMPORTED", flush=True)
    sys.stdin.readline()
data = {{"query": [{q1!r}, {q2!r}], "prompts": [{p!r}] * 2, "labels": [True, True]}}
info = request_api_wrapper(url + compat, data)
samples = [types.SimpleNamespace(sequences=[0, 0], info={{}})]
try:
    update_samples_with_rewards([info], samples)
except Exception as exc:
    print("FAILED", type(exc).__name__)
else:
    print("OK", openrlhf.__file__, json.dumps([float(x) for x in samples[0].rewards]))
"""

STEP = 7  # OpenRLHF sends no step: a URL may name one for the whole run


@pytest.mark.parametrize(
    ("version", "compat", "expected", "restart"),
    [
        ("0.8.11", "&openrlhf=0.8", "OK", False),
        ("0.8.11", "", "FAILED TypeError", False),  # why the setting exists
        ("0.9.0", "", "OK", False),
        ("0.8.11", "&openrlhf=0.8", "OK", True),
        ("0.9.0", "", "OK", True),
    ],
)
def test_older_request_code_and_reward_update(  # type: ignore[no-untyped-def]
    service, tmp_path, version, compat, expected, restart
) -> None:
    target = ROOT / "var" / "frameworks" / f"openrlhf-{version}"
    if not target.exists():
        pytest.skip(f"OpenRLHF {version} is not installed (make test-frameworks installs it)")
    run = f"orl-{version}-{uuid.uuid4().hex[:6]}"
    prompt = PROMPT.replace("test_parser.py", f"test_parser.py ({run})")  # new content
    code = OLD.format(
        here=str(Path(__file__).parent), q1=prompt + SAFE, q2=prompt + UNSAFE, p=prompt
    )
    # requests prints a URL's user part in its HTTP errors: the key comes from a netrc file
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine {HOST} login rewardhub password {service.key}\n")
    netrc.chmod(0o600)
    child = subprocess.Popen(
        [sys.executable, "-c", code, url(service, run, f"&step={STEP}", key="netrc"), compat,
         "wait" if restart else "now"],
        env={**os.environ, "PYTHONPATH": str(target), "NETRC": str(netrc)}, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    restarter = None
    if restart:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().startswith("IMPORTED")
        service.stop()
        restarter = threading.Timer(1.5, service.start)
        restarter.start()
        child.stdin.write("go\n")
        child.stdin.flush()
    try:
        out, err = child.communicate(timeout=300)
    finally:
        if restarter is not None:
            restarter.join()
    assert child.returncode == 0, err[-3000:]
    assert_no_key(service, out, err)
    if restart:  # it logged the tries that found the service down, without the key
        assert "Request error" in out + err, out + err[-2000:]
    line = out.strip().splitlines()[-1]
    assert line.startswith(expected), out + err[-2000:]
    if expected == "OK":
        assert f"openrlhf-{version}" in line
        records = service.records(run, expected=2)
        assert len(records) == 2 and {r["step"] for r in records} == {STEP}
        assert sum(r["unsafe"] for r in records) == 1
        routed = service.reviewed(records)
        assert routed >= {r["scoring_id"] for r in records if r["unsafe"]}
        report(
            "OpenRLHF request_api_wrapper" + (" (openrlhf=0.8)" if compat else ""), version,
            samples=2, scored=2, records=records, routed=len(routed),
            restart="restart within its 5 tries: scored" if restart else "",
        )  # fmt: skip
