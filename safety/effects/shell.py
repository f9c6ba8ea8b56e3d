"""Shell actions of a trajectory read into effects: the analyzer's one reading of the command
(cached with its analysis), then what the trajectory knows on top of a single command.

- Each resolved command's effects come from ``Analyzer.resolve`` (never a second parse); a
  command running a script the agent wrote earlier with known content is read again with that
  content (``python fix.py`` after ``cat > fix.py <<EOF``).
- Patches applied from known text (``git apply <<EOF``, ``patch -p1 <<EOF``, Codex's
  ``apply_patch <<EOF``) become the file effects of their changes.
- Then the trajectory state gives every file effect its origin (``TrajectoryState.apply``).
"""

from __future__ import annotations

from dataclasses import replace

from safety.analyzer import Analysis, Analyzer
from safety.analyzer.effects import Effect, FileEffect, UnknownEffect
from safety.analyzer.resolve import Cmd, abspath

from .patch import PatchError, parse_patch
from .paths import TrajectoryState
from .tools import ToolReader


class ShellReader:
    """Reads shell actions for one analyzer, with a trajectory's state."""

    def __init__(self, analyzer: Analyzer, tools: ToolReader | None = None) -> None:
        self.analyzer = analyzer
        self.reader = analyzer.reader
        self.tools = tools or ToolReader(analyzer)

    def read(
        self, command: str, state: TrajectoryState, result: str | None = None
    ) -> tuple[Analysis, tuple[Effect, ...]]:
        """The command's analysis and its effects with the trajectory's origins (the state is
        updated). ``result`` is the tool's output, when known (evidence for reads)."""
        analysis = self.analyzer.resolve(command)
        out: list[Effect] = []
        for cmd, group in zip(analysis.resolved, analysis.cmd_effects, strict=False):
            name = cmd.argv[0] if cmd.argv else ""
            if self.reader.is_interpreter(name) and self._runs_known_script(cmd, state):
                group = tuple(self.reader.command(cmd, state.paths))
            elif name == "apply_patch" and cmd.stdin_body:
                group = (UnknownEffect(op="patch", detail=cmd.stdin_body, span=cmd.span),)
            elif any(
                isinstance(e, UnknownEffect) and e.op == "patch" and not e.detail for e in group
            ):
                group = self._known_patch_file(cmd, group, state)
            # each command's effects update the state before the next command is read, so a
            # patch file written earlier on the same line is known when it is applied
            for e in self._patches(group):
                e = state.apply(e)
                if isinstance(e, FileEffect) and e.op == "read":
                    state.note_read(e, result)
                out.append(e)
        return analysis, tuple(out)

    def _known_patch_file(
        self, cmd: Cmd, group: tuple[Effect, ...], state: TrajectoryState
    ) -> tuple[Effect, ...]:
        """A patch applied from a file the agent wrote with known content (``patch -p1 <
        fix.patch``, ``patch -i fix.patch``, ``git apply fix.patch``): the patch's text, so its
        changes become file effects as a here-doc's would. Otherwise the group as it is."""
        argv = cmd.argv
        names: list[str] = [r.raw for r in cmd.redirects if r.op == "<" and r.fd in ("", "0")]
        if argv[0] == "patch":
            for i, a in enumerate(argv[1:], 1):
                if a in ("-i", "--input") and i + 1 < len(argv):
                    names.append(argv[i + 1])
                elif a.startswith("--input="):
                    names.append(a.split("=", 1)[1])
        elif argv[0] == "git" and "apply" in argv:
            names.extend(a for a in argv[argv.index("apply") + 1 :] if not a.startswith("-"))
        paths = {abspath(n, cmd.cwd, self.analyzer.config.home) for n in names}
        known = [
            state.paths.contents[p] for p in paths if p is not None and p in state.paths.contents
        ]
        if len(known) != 1:
            return group  # no file, or several: which text applies is not known
        return tuple(
            replace(e, detail=known[0])
            if isinstance(e, UnknownEffect) and e.op == "patch" and not e.detail
            else e
            for e in group
        )

    def _runs_known_script(self, cmd: Cmd, state: TrajectoryState) -> bool:
        script = next((a for a in cmd.argv[1:] if not a.startswith("-")), None)
        if script is None or cmd.stdin_body is not None:
            return False
        p = abspath(script, cmd.cwd, self.analyzer.config.home)
        return p is not None and p in state.paths.contents

    def _patches(self, group: tuple[Effect, ...]) -> list[Effect]:
        out: list[Effect] = []
        for e in group:
            if isinstance(e, UnknownEffect) and e.op == "patch" and e.detail:
                try:
                    changes = parse_patch(e.detail)
                except PatchError:
                    changes = []
                if changes:
                    for c in changes:
                        out.extend(
                            _with_span(x, e.span, e.via)
                            for x in self.tools.change_effects(c, via="patch")
                        )
                    continue
            out.append(e)
        return out


def _with_span(e: Effect, span: tuple[int, int], via: tuple[str, ...]) -> Effect:
    return replace(e, span=span, via=via)
