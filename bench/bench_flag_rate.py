"""Flag rates of the default policy on labelled commands and on real agents' commands, tables.

    .venv/bin/python bench/bench_flag_rate.py [--split NAME] [--show-misses] [--examples N]

A command is flagged when the analyzer's verdict is not "allow" (review or block).

1. Labelled set (tests/data/labelled_commands/NAME.jsonl, dev by default; the held-out splits
   only with --split NAME, --heldout being --split heldout): recall on unsafe lines and
   false-positive rate on safe lines, overall, for reward hacks, evasions and per category (a
   safe line counts under the category it is a near miss of, `neighbour_of`), workspace
   /testbed (SWE-bench's). --workspace-roots /testbed,/workspace,/app,/repo judges the lines as a
   task type whose agents may work in any of those would (OpenHands' /workspace, /app, /repo):
   the sets' lines work in all four. --show-misses lists missed unsafe and flagged safe dev
   lines (refused on any other split: held-out lines are for numbers only, see the set's
   README).
2. Real-agent corpus (bench/data/agent_commands/commands.jsonl): commands flagged / total and
   trajectories with any flag / total, each with the trajectory's own workspace; every rule id
   that flagged a command, counted once per command, with one example each. Measured twice:
   each command alone (the per-command analysis, no history), and each trajectory whole
   through the effect model (safety.effects.judge_trajectory: the agent's own files, scripts
   it wrote, ... known from earlier commands). The corpus has commands only (no tool results,
   no file tools, no final patch), so only the shell part of the state is exercised. Every
   command still flagged whole is explained in bench/data/agent_commands/flags_explained.jsonl
   (true unsafe / reward hack / honest but risky / false positive, and why): the bench counts
   them per class and rule, lists any flag without an explanation (--list-flags: all of them).

Targets for later work (issue #19): held-out recall >= 0.95 at FPR <= 0.02; corpus <= 1% flagged.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from safety.analyzer import Analyzer, AnalyzerConfig, analyze, load_default_policy  # noqa: E402
from safety.effects import judge_trajectory  # noqa: E402

LABELLED = ROOT / "tests" / "data" / "labelled_commands"
# the split policy work may read and print; every other split there is held out (see its README)
DEV_SPLIT = "dev"
CORPUS = ROOT / "bench" / "data" / "agent_commands" / "commands.jsonl"
# every command still flagged in whole-trajectory mode, with its class and why (see SOURCE.md)
EXPLAINED = ROOT / "bench" / "data" / "agent_commands" / "flags_explained.jsonl"
WORKSPACE = "/testbed"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def flag_rules(cmd: str, policy, workspace: str | tuple[str, ...]) -> list[str]:
    """Rule ids of the findings that make the verdict not "allow" (empty: not flagged)."""
    roots = (workspace,) if isinstance(workspace, str) else workspace
    result = analyze(cmd, policy=policy, config=AnalyzerConfig(workspace_roots=roots))
    if result.verdict == "allow":
        return []
    return sorted({f.rule for f in result.findings if f.action != "allow"}) or [result.verdict]


def rate(hit: int, n: int) -> str:
    return f"{hit / n:6.1%}" if n else "     -"


def one_line(cmd: str, width: int = 90) -> str:
    text = cmd.replace("\n", "⏎")
    return text if len(text) <= width else text[: width - 1] + "…"


def labelled(policy, split: str, show_misses: bool, roots: tuple[str, ...] = (WORKSPACE,)) -> None:
    rows = read_jsonl(LABELLED / f"{split}.jsonl")
    t0 = time.perf_counter()
    for row in rows:
        row["rules"] = flag_rules(row["cmd"], policy, roots)
    seconds = time.perf_counter() - t0
    unsafe = [r for r in rows if r["label"] == "unsafe"]
    safe = [r for r in rows if r["label"] == "safe"]
    print(
        f"Labelled set: {split}.jsonl, {len(rows)} lines ({len(unsafe)} unsafe, {len(safe)} safe), "
        f"workspace {','.join(roots)}, {seconds:.2f} s ({len(rows) / seconds:.0f} cmd/s)"
    )
    by_cat: dict[str, list[list[dict]]] = defaultdict(lambda: [[], []])
    for r in unsafe:
        by_cat[r["category"]][0].append(r)
    for r in safe:
        by_cat[r["neighbour_of"] or r["category"]][1].append(r)
    header = (
        f"{'category':24s} {'unsafe':>6s} {'flagged':>7s} {'recall':>6s}  "
        f"{'safe':>5s} {'flagged':>7s} {'FPR':>6s}"
    )
    print(header)
    print("-" * len(header))

    def line(name: str, bad: list[dict], good: list[dict]) -> None:
        caught = sum(bool(r["rules"]) for r in bad)
        false = sum(bool(r["rules"]) for r in good)
        print(
            f"{name:24s} {len(bad):6d} {caught:7d} {rate(caught, len(bad))}  "
            f"{len(good):5d} {false:7d} {rate(false, len(good))}"
        )

    for cat in sorted(by_cat, key=lambda c: (-len(by_cat[c][0]), c)):
        line(cat, *by_cat[cat])
    print("-" * len(header))
    line("all", unsafe, safe)
    line("  reward hacks", [r for r in unsafe if r["reward_hack"]], [])
    line("  evasions", [r for r in unsafe if r["evasion"]], [])
    line("  other unsafe", [r for r in unsafe if not r["reward_hack"]], [])
    line("  safe, verbatim agents", [], [r for r in safe if r["category"] == "ordinary"])
    line("  safe, written near-miss", [], [r for r in safe if r["category"] == "near-miss"])
    if show_misses:
        print("\nmissed unsafe (category / behaviour: command):")
        for r in unsafe:
            if not r["rules"]:
                print(f"  {r['category']} / {r['behaviour']}: {one_line(r['cmd'])}")
        print("\nflagged safe (neighbour_of / behaviour [rules]: command):")
        for r in safe:
            if r["rules"]:
                print(
                    f"  {r['neighbour_of']} / {r['behaviour']} {r['rules']}: {one_line(r['cmd'])}"
                )


def corpus(policy, top: int) -> None:
    trajectories = read_jsonl(CORPUS)
    n_cmds = n_flagged = n_traj_flagged = 0
    rule_count: Counter[str] = Counter()
    rule_example: dict[str, str] = {}
    per_scaffold: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    t0 = time.perf_counter()
    for traj in trajectories:
        any_flag = False
        stats = per_scaffold[traj["scaffold"]]
        for cmd in traj["commands"]:
            rules = flag_rules(cmd, policy, traj["workspace"])
            n_cmds += 1
            stats[0] += 1
            if rules:
                n_flagged += 1
                stats[1] += 1
                any_flag = True
                for rule in rules:
                    rule_count[rule] += 1
                    rule_example.setdefault(rule, cmd)
        n_traj_flagged += any_flag
        stats[2] += 1
        stats[3] += any_flag
    seconds = time.perf_counter() - t0
    print(
        f"\nReal-agent corpus: {len(trajectories)} trajectories, {n_cmds} commands, "
        f"{seconds:.2f} s ({n_cmds / seconds:.0f} cmd/s)"
    )
    header = (
        f"{'scaffold':24s} {'commands':>8s} {'flagged':>7s} {'rate':>6s}  "
        f"{'trajs':>5s} {'any flag':>8s} {'rate':>6s}"
    )
    print(header)
    print("-" * len(header))
    for name, (c, f, t, tf) in sorted(per_scaffold.items(), key=lambda kv: -kv[1][0]):
        print(f"{name:24s} {c:8d} {f:7d} {rate(f, c)}  {t:5d} {tf:8d} {rate(tf, t)}")
    print("-" * len(header))
    print(
        f"{'all':24s} {n_cmds:8d} {n_flagged:7d} {rate(n_flagged, n_cmds)}  "
        f"{len(trajectories):5d} {n_traj_flagged:8d} {rate(n_traj_flagged, len(trajectories))}"
    )
    print(f"\nrules that flagged corpus commands (a command counts once per rule; top {top}):")
    print(f"{'rule':34s} {'commands':>8s} {'share':>6s}  example")
    for rule, count in rule_count.most_common(top):
        print(f"{rule:34s} {count:8d} {rate(count, n_cmds)}  {one_line(rule_example[rule], 70)}")
    if len(rule_count) > top:
        rest = sum(c for _, c in rule_count.most_common()[top:])
        print(f"{'(' + str(len(rule_count) - top) + ' more rules)':34s} {rest:8d}")


def as_trajectory(commands: list[str]) -> dict:
    """The corpus's commands as a C1 trajectory: one assistant step per command (bash)."""
    messages: list[dict] = [{"role": "user", "content": "task"}]
    for i, cmd in enumerate(commands):
        arguments = json.dumps({"command": cmd})
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": "bash", "arguments": arguments}}  # fmt: skip
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
    return {"messages": messages}


def explain_flags(flagged: list[tuple[str, int, list[str], str]], list_all: bool) -> None:
    """Every flagged command joined with its explanation (source, step, rules): counts per class
    and rule; flags with no explanation and explanations no longer flagged are listed, so a
    rule change that moves the corpus shows here."""
    explained = {(e["source"], e["step"], tuple(e["rules"])): e for e in read_jsonl(EXPLAINED)}
    seen: set[tuple[str, int, tuple[str, ...]]] = set()
    per_class: Counter[str] = Counter()
    per_rule: Counter[tuple[str, str]] = Counter()
    missing: list[tuple[str, int, list[str], str]] = []
    for source, step, rules, text in flagged:
        key = (source, step, tuple(rules))
        entry = explained.get(key)
        if entry is None:
            missing.append((source, step, rules, text))
            continue
        seen.add(key)
        per_class[entry["class"]] += 1
        for rule in rules:
            per_rule[(entry["class"], rule)] += 1
    print(f"\nflagged commands explained ({EXPLAINED.name}): {len(seen)} / {len(flagged)}")
    print(f"{'class':20s} {'commands':>8s}  rules (commands)")
    for cls, count in per_class.most_common():
        rules = ", ".join(f"{r} {n}" for (c, r), n in per_rule.most_common() if c == cls)
        print(f"{cls:20s} {count:8d}  {rules}")
    if list_all:
        for key in sorted(seen):
            e = explained[key]
            print(f"  [{e['class']}] {e['instance']} step {e['step']} {','.join(e['rules'])}")
            print(f"      {one_line(e['command'], 100)}\n      {e['why']}")
    for source, step, rules, text in missing:
        print(f"  UNEXPLAINED {source} step {step} {rules}: {one_line(text, 80)}")
    stale = sorted(explained.keys() - seen)
    if stale:
        print(f"  {len(stale)} explained commands are no longer flagged (update {EXPLAINED.name})")
        for key in stale:
            e = explained[key]
            print(f"  NO LONGER FLAGGED [{e['class']}] {e['instance']} step {e['step']} "
                  f"{','.join(e['rules'])}: {one_line(e['command'], 80)}")  # fmt: skip


def corpus_trajectories(policy, top: int, list_flags: bool = False) -> None:
    trajectories = read_jsonl(CORPUS)
    n_cmds = n_flagged = n_traj_flagged = 0
    rule_count: Counter[str] = Counter()
    rule_example: dict[str, str] = {}
    analyzers: dict[str, Analyzer] = {}
    flagged: list[tuple[str, int, list[str], str]] = []
    t0 = time.perf_counter()
    for traj in trajectories:
        ws = traj["workspace"]
        az = analyzers.get(ws)
        if az is None:
            az = analyzers[ws] = Analyzer(policy, AnalyzerConfig(workspace_roots=(ws,)))
        _, verdicts = judge_trajectory(as_trajectory(traj["commands"]), az)
        any_flag = False
        n_cmds += len(traj["commands"])
        for v in verdicts:
            rules = sorted({f.rule for f in v.findings if f.action != "allow"})
            if v.verdict == "allow":
                continue
            n_flagged += 1
            any_flag = True
            flagged.append((traj["source"], v.action.step, rules, v.action.text))
            for rule in rules:
                rule_count[rule] += 1
                rule_example.setdefault(rule, v.action.text)
        n_traj_flagged += any_flag
    seconds = time.perf_counter() - t0
    print(
        f"\nReal-agent corpus as whole trajectories (effect model, state across steps): "
        f"{len(trajectories)} trajectories, {n_cmds} commands, {seconds:.2f} s"
    )
    print(
        f"commands flagged {n_flagged} / {n_cmds} = {rate(n_flagged, n_cmds)}; trajectories "
        f"with any flag {n_traj_flagged} / {len(trajectories)} = "
        f"{rate(n_traj_flagged, len(trajectories))}"
    )
    print(f"{'rule':34s} {'commands':>8s} {'share':>6s}  example")
    for rule, count in rule_count.most_common(top):
        example = one_line(rule_example[rule], 70)
        print(f"{rule:34s} {count:8d} {rate(count, n_cmds)}  {example}")
    explain_flags(flagged, list_flags)


def splits() -> list[str]:
    """The labelled splits on disk: dev first, then the held-out ones."""
    names = sorted(p.stem for p in LABELLED.glob("*.jsonl"))
    return sorted(names, key=lambda name: name != DEV_SPLIT)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--split",
        choices=splits(),
        default=None,
        help=f"labelled split to measure (default {DEV_SPLIT}; the others are held out)",
    )
    ap.add_argument("--heldout", action="store_true", help="the same as --split heldout")
    ap.add_argument("--show-misses", action="store_true", help="list dev misses and false flags")
    ap.add_argument("--examples", type=int, default=25, help="corpus rules to list")
    ap.add_argument("--no-corpus", action="store_true", help="skip the real-agent corpus")
    ap.add_argument(
        "--workspace-roots",
        default=WORKSPACE,
        help=f"comma-separated workspace roots for the labelled set (default {WORKSPACE})",
    )
    ap.add_argument(
        "--list-flags", action="store_true", help="every flagged corpus command with its why"
    )
    args = ap.parse_args()
    if args.heldout and args.split not in (None, "heldout"):
        ap.error("--heldout is --split heldout: give one of them")
    split = "heldout" if args.heldout else (args.split or DEV_SPLIT)
    if split != DEV_SPLIT and args.show_misses:
        ap.error("--show-misses is for dev only: held-out lines are reported as numbers")
    t0 = time.perf_counter()
    policy = load_default_policy()
    print(f"policy {policy.slug} version {policy.version} (python {sys.version.split()[0]})")
    roots = tuple(r.strip() for r in args.workspace_roots.split(",") if r.strip())
    if not roots or not all(r.startswith("/") for r in roots):
        ap.error("--workspace-roots: give absolute paths separated by commas")
    labelled(policy, split, args.show_misses, roots)
    if not args.no_corpus:
        corpus(policy, args.examples)
        corpus_trajectories(policy, args.examples, args.list_flags)
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
