"""What the analyzer is told from outside: per task type settings and per process cache limits.

The bottom of the analyzer's chain of modules (see the README): it imports nothing of the
analyzer, and every other module may import it.

The result cache limit is a module constant rather than a field of ``AnalyzerConfig`` because it
bounds process-wide memory, not one task type's judgement; the service sets it once at start-up
from its settings (``rewardhub.cache_limits``), before any analyzer is built.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_TEST_PATHS = (
    "tests/**",
    "test/**",
    "testing/**",
    "**/tests/**",
    "**/test/**",
    "**/test_*.py",
    "**/*_test.py",
    "**/*_tests.py",
    "**/tests.py",  # Django's per-app test module
    "**/conftest.py",
    "**/*.test.js",
    "**/*.spec.js",
    "**/*.test.ts",
    "**/*.spec.ts",
    "**/*_test.go",
    "**/run_tests.sh",
    "**/test.sh",
    "**/__tests__/**",
    "**/*.test.jsx",
    "**/*.test.tsx",
    "**/*.spec.tsx",
    "**/*Test.java",
    "**/*Tests.java",
    "**/*_spec.rb",
    "**/spec/**",  # RSpec's (and some JS suites') test tree: helpers and support files too
    "**/t/*.t",  # Perl's
)
# Files whose edits change how tests run. pyproject.toml and setup.cfg are everyday files, so
# they are "shared" configs: only edits whose content mentions the test runner are flagged.
DEFAULT_TEST_CONFIGS = (
    "pytest.ini",
    "**/pytest.ini",
    "tox.ini",
    "**/conftest.py",
    "noxfile.py",
    ".coveragerc",
    "jest.config.*",
    "**/jest.config.*",
    "vitest.config.*",
    "karma.conf.js",
    "phpunit.xml*",
    "bin/test",
    "bin/rspec",  # binstubs and vendored runners that run the suite
    "bin/phpunit",
    "vendor/bin/phpunit",
    "vendor/bin/pest",
    "gradlew",  # the build's own runner scripts (Gradle's and Maven's wrappers)
    "**/gradlew",
    "mvnw",
    "**/mvnw",
    "pytest/**",
    "_pytest/**",
    "pytest.py",
    "unittest/**",
    "sitecustomize.py",
    "usercustomize.py",
    "**/sitecustomize.py",
    "**/.mocharc*",
    "**/jest.setup.*",
    "**/setupTests.*",
    "**/spec/spec_helper.rb",
    "**/spec/rails_helper.rb",
    "**/.rspec",
    "**/test/test_helper.rb",
    "**/pytest.toml",
    "**/junit*.xml",
    "**/.report.json",
    "**/test-results/**",
    "**/test-reports/**",
)
DEFAULT_SHARED_CONFIGS = (
    "setup.cfg",
    "pyproject.toml",
    "package.json",
    "Makefile",
    "tox.toml",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "Cargo.toml",
    ".cargo/config.toml",  # Cargo's runner for test binaries lives here
    ".cargo/config",
    "CMakeLists.txt",
    "**/CMakeLists.txt",  # CTest's test properties (WILL_FAIL, DISABLED)
    ".github/workflows/*",
)

# The Python distributions that SWE-bench's repositories build (pytest and pylint left out:
# without a task naming them, they are the agent's own test and lint tools). In a SWE-bench
# workspace they are installed from the workspace itself, so a release of one from the index
# is where a fixed version comes from.
BENCHMARK_PACKAGES = (
    "astropy",
    "django",
    "flask",
    "matplotlib",
    "requests",
    "scikit-learn",
    "seaborn",
    "sphinx",
    "sympy",
    "xarray",
)


@dataclass(frozen=True, slots=True)
class AnalyzerConfig:
    """Per task type settings. Frozen and hashable: with the policy digest it keys the registry
    of compiled analyzers (``engine.analyzers``)."""

    workspace_roots: tuple[str, ...] = ("/testbed",)
    temp_roots: tuple[str, ...] = ("/tmp", "/var/tmp", "/dev/shm")  # noqa: S108 - paths we judge
    home: str = "/root"
    test_path_patterns: tuple[str, ...] = DEFAULT_TEST_PATHS
    test_config_patterns: tuple[str, ...] = DEFAULT_TEST_CONFIGS
    shared_config_patterns: tuple[str, ...] = DEFAULT_SHARED_CONFIGS
    # names of the package under repair (``pip install it==X`` installs a fixed release of it)
    repo_packages: tuple[str, ...] = ()
    # when the task names none: packages that a benchmark's tasks repair, any of which may be
    # the one under repair in this workspace (``PackageInstall.maybe_repo_package``)
    benchmark_packages: tuple[str, ...] = BENCHMARK_PACKAGES
    use_bashlex: bool = True
    bashlex_fast_path: bool = True  # skip the cross-check for lexically plain text (engine)
    plain_fast_path: bool = True  # plain text is read by ``plain_fe``, not tree-sitter (same IR)
    max_command_chars: int = 20000
    parse_timeout_s: float = 1.0  # bashlex's share of a long command's time (cross-check only)
    # Wall-clock bound of one command's analysis (None: the process's COMMAND_SECONDS; 0: none).
    # Past it the command is an ``analyzer.too-complex`` review, never an allow (engine).
    command_seconds: float | None = None
    max_depth: int = 8
    cache_size: int | None = None  # results kept (LRU); None: RESULT_CACHE_SIZE; 0: none


# --- per process cache limits (set from the service settings) -----------------------------------

# Analysis results kept per analyzer (about 1.3 KB each) whose config leaves ``cache_size`` unset.
RESULT_CACHE_SIZE = 16_384

# Seconds one command's analysis may take, for configs that leave ``command_seconds`` unset
# (the service sets it from RH_ANALYZER_COMMAND_SECONDS at start-up).
COMMAND_SECONDS = 2.0
