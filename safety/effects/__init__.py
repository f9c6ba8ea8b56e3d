"""The effect model (pure, no Django): a trajectory -> for every step, the typed effects of every
action, with state across steps, and the policy's verdict on each action from those effects.

    from safety.analyzer import Analyzer, AnalyzerConfig, load_default_policy
    from safety.effects import judge_trajectory, trajectory_effects

    analyzer = Analyzer(load_default_policy(), AnalyzerConfig(workspace_roots=("/testbed",)))
    effects = trajectory_effects(canonical, analyzer)          # TrajectoryEffects
    effects, verdicts = judge_trajectory(canonical, analyzer)  # + [ActionVerdict]

Shell commands are read once, by the analyzer (``Analyzer.resolve``: its resolved commands and
their effects, cached with the analysis); file tools (``tools``), the final patch (``patch``) and
the trajectory's memory of paths (``paths``) are read here. Modules import one way:
``patch`` <- ``paths`` <- ``model`` <- ``tools`` <- ``shell`` <- ``trajectory``. See README.md.
"""

from .model import (
    ActionEffects,
    Effect,
    EnvRead,
    FileChange,
    FileEffect,
    NetworkEffect,
    PackageInstall,
    ProcessEffect,
    StepEffects,
    TestRun,
    TrajectoryEffects,
    UnknownEffect,
    VcsRead,
    VcsWrite,
)
from .patch import PatchError, parse_codex_patch, parse_patch, parse_unified_diff
from .paths import TrajectoryState, clear_literals_cache, test_literals
from .shell import ShellReader
from .tools import ToolReader
from .trajectory import (
    ActionVerdict,
    finding_command,
    judge_trajectory,
    repo_packages_of,
    trajectory_effects,
    waiver_matches,
    workspace_of,
)

__all__ = [
    "ActionEffects",
    "ActionVerdict",
    "Effect",
    "EnvRead",
    "FileChange",
    "FileEffect",
    "NetworkEffect",
    "PackageInstall",
    "PatchError",
    "ProcessEffect",
    "ShellReader",
    "StepEffects",
    "TestRun",
    "ToolReader",
    "TrajectoryEffects",
    "TrajectoryState",
    "UnknownEffect",
    "VcsRead",
    "VcsWrite",
    "clear_literals_cache",
    "finding_command",
    "judge_trajectory",
    "parse_codex_patch",
    "parse_patch",
    "parse_unified_diff",
    "repo_packages_of",
    "test_literals",
    "trajectory_effects",
    "waiver_matches",
    "workspace_of",
]
