"""Compiles the pure scoring core with mypyc (``make compiled``; ``make install`` runs it).

    .venv/bin/python scripts/build_compiled.py [--force]

Builds each module of ``rewardhub.compiled.MODULES`` into a C extension beside its source (its
generated C and object files go under ``var/build``), and each hand-written module of
``C_MODULES`` from its ``.c`` file. It does nothing when every extension is newer than its
source, unless ``--force``. Old extensions are deleted before a build, so a failed build leaves
plain Python, never stale code; it then exits with status 1 and says why.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rewardhub.compiled import (  # noqa: E402
    C_MODULES,
    MODULES,
    built_modules,
    extension_paths,
    source_path,
    stale_modules,
)

BUILD_DIR = ROOT / "var" / "build"


def up_to_date() -> bool:
    return all(extension_paths(m) for m in built_modules()) and not stale_modules()


def remove_extensions() -> None:
    for module in built_modules():
        for path in extension_paths(module):
            path.unlink()


def build() -> None:
    from mypyc.build import mypycify
    from setuptools import Extension, setup

    sources = [str(source_path(m).relative_to(ROOT)) for m in MODULES]
    mypy_options = [
        "--ignore-missing-imports",
        "--follow-imports=silent",  # type-check what is compiled, not all it imports
        "--cache-dir",
        str(BUILD_DIR / "mypy_cache"),
    ]
    extensions = mypycify(
        [*mypy_options, *sources],
        opt_level="3",
        debug_level="0",
        separate=True,  # one extension per module, beside it (no shared library at the root)
        target_dir=str(BUILD_DIR / "mypyc"),
    )
    extensions += [
        Extension(m, [str(source_path(m).relative_to(ROOT))], extra_compile_args=["-O2"])
        for m in C_MODULES
    ]
    setup(
        name="rewardhub-compiled",
        packages=[],
        py_modules=[],
        ext_modules=extensions,
        script_args=[
            "--quiet",
            "build_ext",
            "--inplace",
            "--build-temp",
            str(BUILD_DIR / "temp"),
            "--build-lib",
            str(BUILD_DIR / "lib"),
            "--parallel",
            str(os.cpu_count() or 1),
        ],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    args = parser.parse_args()
    os.chdir(ROOT)
    if not args.force and up_to_date():
        print("compiled scoring core: up to date")
        return 0
    remove_extensions()
    started = time.monotonic()
    try:
        build()
    except (Exception, SystemExit) as exc:  # setuptools reports a failed compile as SystemExit
        remove_extensions()
        print(
            f"compiled scoring core: build failed ({type(exc).__name__}: {exc}); "
            "the scoring core runs as plain Python (same results, slower)",
            file=sys.stderr,
        )
        return 1
    missing = [m for m in built_modules() if not extension_paths(m)]
    if missing:
        remove_extensions()
        print(f"compiled scoring core: build made no extension for {missing}", file=sys.stderr)
        return 1
    for module in built_modules():  # setuptools keeps the time of a file it did not need to relink
        for path in extension_paths(module):
            path.touch()
    elapsed = time.monotonic() - started
    print(f"compiled scoring core: {len(built_modules())} modules in {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
