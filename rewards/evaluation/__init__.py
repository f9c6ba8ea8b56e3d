"""The pure evaluation core: cases of three kinds (``cases``), their statistics with confidence
intervals (``metrics``) and the evaluation of a reward against them (``run``). No Django."""

from .cases import (
    KINDS,
    LABELS,
    TIERS,
    Case,
    CaseError,
    case_key,
    line_messages,
    parse_case,
    parse_jsonl,
    to_jsonl,
)
from .run import GATING_KINDS, Judge, Judgement, compare_outcomes, evaluate_cases, judge_for_scorer

__all__ = [
    "GATING_KINDS",
    "KINDS",
    "LABELS",
    "TIERS",
    "Case",
    "CaseError",
    "Judge",
    "Judgement",
    "case_key",
    "compare_outcomes",
    "evaluate_cases",
    "judge_for_scorer",
    "line_messages",
    "parse_case",
    "parse_jsonl",
    "to_jsonl",
]
