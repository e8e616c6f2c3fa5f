#!/usr/bin/env bash
# Installs everything into ./.venv (newest supported versions), checks the import-layer contract
# (lint-imports) and the lint rules (ruff), and runs the whole test suite,
# then runs the game-core tests again in ./.venv-oldest pinned to the oldest supported
# versions (the JAX that Colab's TPU image ships). Extra arguments go to the first pytest run.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"

make_venv() {  # make_venv DIR PIP-ARGS...
  local dir=$1; shift
  [ -x "$dir/bin/python" ] || "$PYTHON" -m venv "$dir"
  "$dir/bin/python" -m pip install -q --upgrade pip
  "$dir/bin/python" -m pip install -q "$@"
}

echo "== installing newest versions into .venv"
make_venv .venv -e ".[dev]"
echo "== architecture contract (lint-imports) and lint (ruff)"
.venv/bin/lint-imports
.venv/bin/ruff check .
echo "== full test suite (newest versions)"
.venv/bin/python -c "import jax, flax, mctx; print('jax', jax.__version__, 'flax', flax.__version__, 'mctx', mctx.__version__)"
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=15 "$@"

echo "== installing oldest supported versions into .venv-oldest"
make_venv .venv-oldest "jax==0.7.2" "jaxlib==0.7.2" "flax==0.11.2" numpy pytest hypothesis pgx rust-reversi
echo "== game-core tests (oldest supported versions)"
.venv-oldest/bin/python -c "import jax, flax; print('jax', jax.__version__, 'flax', flax.__version__)"
core_tests=$(grep -l "pytestmark = pytest.mark.core" tests/test_*.py)
# shellcheck disable=SC2086
.venv-oldest/bin/python -m pytest -q -p no:cacheprovider $core_tests
