"""Shared test fixtures: the reference data directory from outside the project; one XLA
compilation cache for the whole test session; the tiny network and config many tests build
(plain functions, imported as ``from tests.conftest import tiny_net, tiny_config``)."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.ci_budget import left_to_the_full_run


def _share_compilation_cache() -> None:
    """One persistent XLA compilation cache for this test session and every process it starts.

    Many tests compile the same programs (a tiny training iteration, compiled again by every
    process a kill-and-resume test restarts, the notebooks' runs); with a shared cache only the
    first compiles, which is most of what keeps CI inside its time budget. The directory is new
    for each session and removed at its end, so a clean checkout measures the same as a
    developer's run and no executable outlives a code change. A cache directory set by the caller
    (``JAX_COMPILATION_CACHE_DIR``) is used as it is.
    """
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return
    path = tempfile.mkdtemp(prefix="othello-jax-tests-xla-cache-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = path  # read by jax in this process and in subprocesses
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
    if "jax" in sys.modules:  # imported before this file (a plugin): set it there too
        import jax

        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


_share_compilation_cache()
# `othello-jax train` splits a run over one CPU device per core unless JAX_NUM_CPU_DEVICES is
# set (commands/train.py, tested in tests/test_cores.py). The tests pin one device, in this
# process and in the training processes they start, so that a CLI call inside the test process
# cannot change the device count of every later test, and the runs they compare stay one-lane
# runs compiled once; tests that need more devices set the variable themselves.
os.environ.setdefault("JAX_NUM_CPU_DEVICES", "1")
# Most test programs run once on tiny inputs, so XLA's optimisation passes cost more than they
# save: jax's public `jax_disable_most_optimizations` (LLVM -O0, no expensive passes) for this
# process and the processes it starts (the newest-versions leg: 23 -> 13.5 minutes on 2 cores).
# Tests marked `optimized` compile as users' code does (see `optimized_compilation` below).
# Set JAX_DISABLE_MOST_OPTIMIZATIONS=0 to run every test on optimised code.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("OTHELLO_JAX_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (FFO, XOT, WThor); a missing directory is an error, never a skip."""
    if not SHARED_DATA.is_dir():
        raise FileNotFoundError(f"reference data not found at {SHARED_DATA}; set OTHELLO_JAX_SHARED_DATA")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def optimized_compilation(request):
    """Tests marked ``optimized`` compile with XLA's optimisations on, as users' runs do.

    Needed where XLA's unoptimised CPU code differs from the optimised one: the gradient of the
    global-pooling block came out NaN at -O0 (finite and learning when optimised, same inputs).
    The flag is read at compile time, so programs compiled inside the test are optimised; the
    processes it starts inherit the variable.
    """
    if request.node.get_closest_marker("optimized") is None:
        yield
        return
    import jax

    request.getfixturevalue("monkeypatch").setenv("JAX_DISABLE_MOST_OPTIMIZATIONS", "0")  # restored after
    before = bool(jax.config.values["jax_disable_most_optimizations"])
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", before)


# The longest tests in CI (each 1-4 minutes on the 2-core machine, most of them whole runs of the
# users' commands), longest first. They start first, alternating between the two halves of the run
# that pytest-xdist's work-stealing scheduler gives its two workers, so no worker is left with one
# at the end; the rest fill in around them.
LONGEST_FIRST = (
    # the Colab-image leg's longest (5 of its 7 minutes; slow in the first leg): first, or the leg waits for it
    "test_train_then_evaluate_notebooks_as_shipped",
    "test_quickstart_stopped_resumed_then_export_and_analyze_its_network",
    "test_sigterm_resume_and_extension_equal_the_uninterrupted_run",
    "test_the_readmes_expert_start_trains_scores_and_starts_8x8_self_play",
    "test_periodic_evaluation_scores_baselines_keeps_the_best_and_reuses_compiled_matches",
    "test_one_sigint_during_the_in_run_evaluation_abandons_it_saves_the_iteration_and_resumes",
    "test_exact_labels_then_learning_in_one_budget",
    "test_supervised_learning_splits_its_batch_and_matches_one_device",
    "test_train_with_the_readme_flags_then_the_elo_ladder",
)


def pytest_itemcollected(item: pytest.Item) -> None:
    """The tests CI leaves to the full run (tests/ci_budget.py) are marked slow before -m selects."""
    if left_to_the_full_run(item.nodeid):
        item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True)  # after -m/-k have deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests in LONGEST_FIRST at the head of each half of the run, alternating (see above)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    longest = sorted((item for item in items if item.originalname in rank), key=lambda item: rank[item.originalname])
    rest = [item for item in items if item.originalname not in rank]
    cut = len(items) // 2 - len(longest[0::2])
    items[:] = longest[0::2] + rest[:cut] + longest[1::2] + rest[cut:]


TIMES_ENV = "OTHELLO_JAX_TEST_TIMES"  # a file: each test's seconds, appended as it ends (a profile of the suite)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """With ``$OTHELLO_JAX_TEST_TIMES`` set, append ``SECONDS OUTCOME PHASE NODEID`` for each phase
    as it ends (on the controller under xdist), so a suite stopped halfway still has its profile
    (pytest's --durations prints only at the end)."""
    path = os.environ.get(TIMES_ENV)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if path and not worker and (report.when == "call" or report.duration >= 1.0 or report.failed):
        with open(path, "a") as log:
            log.write(f"{report.duration:9.2f} {report.outcome:7} {report.when:8} {report.nodeid}\n")


# jax and the package are imported inside the helpers below: this file must set the environment
# above before anything imports jax.
@functools.cache
def tiny_net(size: int) -> tuple[Callable, Any]:
    """The ``tiny`` preset network on a ``size`` board: (inference apply function, variables from key 0)."""
    import jax

    from othello_jax.model import NetworkConfig, init_variables, make_network

    net = make_network(size, NetworkConfig.preset("tiny"))
    return functools.partial(net.apply, train=False), init_variables(net, jax.random.key(0), size)


def slow_unless(cases: list[tuple], in_ci: Callable[..., bool]) -> list:
    """``cases`` (argument tuples) as pytest params, those for which ``in_ci(*case)`` is false marked
    ``slow``: CI runs a covering subset of a parametrized test, ``-m ""`` every case."""
    return [pytest.param(*case, marks=[] if in_ci(*case) else [pytest.mark.slow]) for case in cases]


def tiny_config(**overrides: Any):
    """A fresh shipped ``tiny_test`` config with ``overrides`` by dotted name (``"checkpoint.every": 5``)."""
    from experiments.configs import tiny_test

    config = tiny_test.get_config()
    config.update_from_flattened_dict(overrides)
    return config
