#!/usr/bin/env bash
# Installs othello-jax into ./.venv, trains the 6x6 laptop config (240 iterations or 26 minutes,
# whichever ends first: 11 minutes in all on a quiet 2-core CPU, up to ~32 on a slow one;
# re-running resumes), then plays the trained agent (with search) against the random, greedy
# and alpha-beta depth-3 baselines, both colours, and draws the curves.
# Set WORKDIR or CONFIG to change where and what it trains. If training is stopped (SIGTERM,
# Ctrl-C) it exits with status 75 after a checkpoint, without evaluating: run it again.
# A smoke run: ITERATIONS=1 GAMES=2 SIMS=2 bash scripts/quickstart.sh trains 1 iteration
# (`--config.iterations`) and plays every evaluation, the run's own included, with GAMES games
# of SIMS simulations (a few minutes); SKIP_INSTALL=1 uses ./.venv as it is (no pip).
# TRAIN_ARGS adds `othello-jax train` flags (e.g. TRAIN_ARGS="--config.seed=3"; split at spaces).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
CONFIG="${CONFIG:-experiments/configs/othello6_cpu.py}"
WORKDIR="${WORKDIR:-runs/othello6_cpu}"
GAMES="${GAMES:-200}"
SIMS="${SIMS:-128}"
ITERATIONS="${ITERATIONS:-}"  # empty: the config's iterations
train_args=()
if [ -n "$ITERATIONS" ]; then  # a shortened run: its evaluations as short as the ones below
  train_args=(--config.iterations="$ITERATIONS" --config.eval.games="$GAMES" --config.eval.num_simulations="$SIMS")
fi
read -r -a extra_args <<< "${TRAIN_ARGS:-}"
train_args+=(${extra_args[@]+"${extra_args[@]}"})

quietly() {  # runs "$@" and shows its output only if it fails (pip's and setuptools' notices are noise here)
  local log
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "== failed: $*" >&2
    return 1
  fi
  rm -f "$log"
}

if [ "${SKIP_INSTALL:-0}" != 1 ]; then
  echo "== installing othello-jax and its dependencies into ./.venv (pip; a few minutes the first time)"
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  quietly .venv/bin/python -m pip install -q --upgrade pip
  quietly .venv/bin/python -m pip install -q -e .
fi
cli=.venv/bin/othello-jax

echo "== training $CONFIG into $WORKDIR${ITERATIONS:+ ($ITERATIONS iterations)}"
status=0
"$cli" train --config="$CONFIG" --workdir="$WORKDIR" ${train_args[@]+"${train_args[@]}"} || status=$?
if [ "$status" -eq 75 ]; then  # stopped by a signal after a checkpoint: the run is not finished
  echo "== training stopped before the end (checkpoint saved); run $0 again to resume, then evaluate" >&2
  exit 75
fi
[ "$status" -eq 0 ] || exit "$status"
"$cli" plot "$WORKDIR"

size=$(.venv/bin/python -c "import runpy; print(runpy.run_path('$CONFIG')['get_config']().board_size)")
for opponent in random greedy alphabeta:depth=3; do
  echo "== trained agent (${SIMS} simulations) vs $opponent, $GAMES games, both colours"
  "$cli" eval --size="$size" --black="net:ckpt=$WORKDIR,sims=$SIMS" --white="$opponent" \
    --games="$GAMES"
done
