"""Parser front ends. Each turns bash text into the shared IR (``safety.analyzer.ir``).

Interface: ``parse(src: str, **limits) -> ParseResult``; it never raises. ``treesitter_fe``
(tree-sitter-bash, MIT) is the primary parser and always runs. ``bashlex_fe`` (bashlex,
GPL-3.0-or-later) is the cross-check; it is imported only through this package and switched off
with ``AnalyzerConfig(use_bashlex=False)``, so a deployment can drop the GPL dependency.
``plain_fe`` (our own, returns ``None`` when it declines) reads plain text into the IR tree-sitter
would build for it, at a fraction of the cost; the engine tries it first.
"""
