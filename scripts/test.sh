#!/usr/bin/env bash
# Installs everything into ./.venv (newest supported versions), checks the import-layer contract
# (lint-imports) and the lint rules (ruff), and runs the whole test suite,
# then the Colab-image leg: ./.venv-colab on Python 3.13 with the versions Colab's image ships
# (the oldest the project supports) installed first and the project on top without upgrading
# them, running the notebooks (which train a tiny run), the game-core tests and the fuzz tests.
# Extra arguments go to the first pytest run (e.g. -m "" to include the tests marked slow).
# The leg's Python 3.13 is $COLAB_PYTHON, else `python3.13` on PATH, else pyenv's 3.13
# (scripts/colab_python.sh); without one the leg is skipped (one line), except under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
# the Colab-image leg's interpreter (looked for first, so CI without one fails before the long run)
# shellcheck source=scripts/colab_python.sh
. scripts/colab_python.sh
colab_status=0
COLAB_PYTHON=$(colab_leg_python) || colab_status=$?
[ "$colab_status" -le 1 ] || exit 1
[ "$colab_status" -eq 1 ] || echo "== the Colab-image leg will run on $COLAB_PYTHON"

make_venv() {  # make_venv DIR PIP-ARGS...
  local dir=$1; shift
  [ -x "$dir/bin/python" ] || "$PYTHON" -m venv "$dir"
  "$dir/bin/python" -m pip install -q --upgrade pip
  "$dir/bin/python" -m pip install -q "$@"
}

# Colab's image today: Python 3.13 with these pins. The project goes on top with the first five held
# (constraints), as `pip install othello-jax` would on Colab; pip may upgrade chex (mctx needs a newer
# one), as it does there. The versions it ends with are printed in the leg.
COLAB_PINS=("jax==0.7.2" "jaxlib==0.7.2" "flax==0.11.2" "optax==0.2.8" "orbax-checkpoint==0.12.4" "chex==0.1.90")
# The pins go into .venv-colab in the background while the first leg runs (mostly downloads and
# unpacking: ~1.5 of the leg's ~9 minutes on this 2-core machine); the project goes on top after it.
colab_pins_log=; colab_pins_pid=
stop_colab_pins() {  # on an early exit: the background install and its pip stop with the script
  [ -z "$colab_pins_pid" ] || { pkill -P "$colab_pins_pid" 2>/dev/null; kill "$colab_pins_pid" 2>/dev/null; } || true
}
COLAB_READY=.venv-colab/.colab-pins-installed  # written once the pins are in: a partial install is redone
if [ "$colab_status" -eq 0 ] && [ ! -f "$COLAB_READY" ]; then
  colab_pins_log=$(mktemp)
  trap 'stop_colab_pins; rm -f "$colab_pins_log"' EXIT
  echo "== installing Colab's versions (Python 3.13, ${COLAB_PINS[*]}) into .venv-colab, in the background"
  { rm -rf .venv-colab && "$COLAB_PYTHON" -m venv .venv-colab \
      && .venv-colab/bin/python -m pip install -q --upgrade pip \
      && .venv-colab/bin/python -m pip install -q "${COLAB_PINS[@]}" && touch "$COLAB_READY"; } >"$colab_pins_log" 2>&1 &
  colab_pins_pid=$!
fi

echo "== installing newest versions into .venv"
make_venv .venv -e ".[dev]"
echo "== architecture contract (lint-imports) and lint (ruff)"
.venv/bin/lint-imports
.venv/bin/ruff check .
echo "== test suite (newest versions), all but the tests marked slow"
# Tests marked slow (FFO #45-49, the 2048-game search, the notebooks, resume on 8 devices, the chaos
# kills, two-process training, two arena strength checks, the search benchmark, the test set's
# remake, the stages-and-gating loop, and cases that only repeat what another CI test covers, each
# saying which, most of them listed in tests/ci_budget.py) are left out here to keep CI near 30
# minutes on a 2-core machine; the notebooks still run in the Colab leg below. A README command's
# test is never marked slow (tests/test_readme.py).
# `bash scripts/test.sh -m ""` runs every test (a later -m wins).
.venv/bin/python -c "import jax, flax, mctx; print('jax', jax.__version__, 'flax', flax.__version__, 'mctx', mctx.__version__)"
# The browser tests (tests/test_serve_browser.py) drive Debian's chromium: installed here where missing and possible.
if ! command -v chromium >/dev/null 2>&1; then
  { [ "$(id -u)" = 0 ] && command -v apt-get && { apt-get install -y -qq chromium \
    || { apt-get update -qq && apt-get install -y -qq chromium; }; }; } >/dev/null 2>&1 \
    || echo "== no chromium, and it cannot be installed here (apt-get install -y chromium, as root): the browser tests skip"
fi
# Two pytest workers (TEST_WORKERS): the tests are mostly single-threaded compilation, so both
# cores of a 2-core machine work (37 min -> 23 min for this leg, measured); they share the cache.
# With XLA's optimisations mostly off for tests (tests/conftest.py) the leg took 14 min on a fresh
# clone of this 2-core machine (2026-11-24), 30 min once it ran users' commands as they run them
# (resume on 2 and 8 devices, every entry point, chaos kills on 2 devices; 2026-11-25).
# Work stealing (an idle worker takes half of the other's queue) and the longest tests first
# (tests/conftest.py LONGEST_FIRST) keep both workers busy to the end.
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=30 -n "${TEST_WORKERS:-2}" --dist=worksteal -m "not slow" "$@"

# ---- the Colab-image leg ----------------------------------------------------------------------
if [ "$colab_status" -eq 1 ]; then
  echo "== the Colab-image leg: skipped (no Python 3.13, see the first line)"
  exit 0
fi
colab_held=$(mktemp); colab_before=$(mktemp)
trap 'rm -f "$colab_held" "$colab_before" ${colab_pins_log:+"$colab_pins_log"}' EXIT
if [ -n "$colab_pins_pid" ]; then
  echo "== waiting for Colab's versions to finish installing into .venv-colab"
  if ! wait "$colab_pins_pid"; then
    colab_pins_pid=
    cat "$colab_pins_log" >&2
    echo "error: installing Colab's versions into .venv-colab failed (above)" >&2
    exit 1
  fi
  colab_pins_pid=
else
  echo "(reusing .venv-colab, made earlier with Colab's versions; delete it to install them afresh)"
fi
.venv-colab/bin/python -m pip freeze > "$colab_before"
printf '%s\n' "${COLAB_PINS[@]:0:5}" > "$colab_held"  # all but chex: never upgraded
.venv-colab/bin/python -m pip install -q -c "$colab_held" -e ".[dev]"
.venv-colab/bin/python - "$colab_before" <<'PY'
import sys
from importlib.metadata import distributions
before = dict(line.strip().split("==", 1) for line in open(sys.argv[1]) if "==" in line)
changed = [f"{name} {before[name]} -> {d.version}" for d in distributions()
           if (name := d.metadata["Name"]) in before and before[name] != d.version]
print("installing the project changed:", ", ".join(sorted(changed)) or "nothing already installed")
PY
echo "== notebooks, a short training run, game-core and fuzz tests (Colab's versions)"
.venv-colab/bin/python - <<'PY'
import sys
from importlib.metadata import version
print("python", sys.version.split()[0], *(f"{p} {version(p)}" for p in
      ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "chex", "mctx")))
PY
core_tests=$(grep -l "pytestmark = pytest.mark.core" tests/test_*.py | grep -v tests/test_lines.py)
# The notebooks train the tiny_test config (train, resume from the Drive mirror, evaluate), play and
# serve the GTP engine. Skipped here (the newest-versions run above has them, and the leg must stay
# short: they take ~6 of its minutes on this 2-core machine): the cross-checks of the rules against
# reference implementations (perft counts, pgx, rust-reversi, the pure-Python reference, the line
# replayer's), which test game logic, not the versions, and every test that is not game core.
# shellcheck disable=SC2086
.venv-colab/bin/python -m pytest -q -p no:cacheprovider --durations=8 -n "${TEST_WORKERS:-2}" --dist=worksteal tests/test_notebooks.py tests/test_fuzz_*.py \
  $core_tests -k "not perft and not reference and not pgx and not rust_reversi"
