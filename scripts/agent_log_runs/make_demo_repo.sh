#!/usr/bin/env bash
# A tiny Python package with one bug (the median of an even-length list) and its tests, as a
# fresh git repository at $1 (default /tmp/demo-repo): the work the scripted episodes do.
set -euo pipefail
repo="${1:-/tmp/demo-repo}"
rm -rf "$repo"
mkdir -p "$repo/calc" "$repo/tests"
cat > "$repo/calc/__init__.py" <<'EOF'
__version__ = "0.1.0"
EOF
cat > "$repo/calc/stats.py" <<'EOF'
"""Small statistics helpers."""


def mean(values):
    """The arithmetic mean of a non-empty list of numbers."""
    return sum(values) / len(values)


def median(values):
    """The middle value of a non-empty list of numbers."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]
EOF
cat > "$repo/tests/test_stats.py" <<'EOF'
from calc.stats import mean, median


def test_mean():
    assert mean([1, 2, 3]) == 2


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5
EOF
printf '__pycache__/\n.pytest_cache/\n' > "$repo/.gitignore"
cat > "$repo/README.md" <<'EOF'
# calc

Small statistics helpers. Run the tests with `python -m pytest -q`.
EOF
cd "$repo"
git init -q -b main
git -c user.name=demo -c user.email=demo@example.invalid add -A
git -c user.name=demo -c user.email=demo@example.invalid commit -q -m "calc: mean and median"
