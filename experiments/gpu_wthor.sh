#!/usr/bin/env bash
# Liskowski et al.'s Conv8+BN move predictor on one lent GPU, inside one device session (issue 55):
# build the WThor dataset there (their random 5% split) from the database where the commands find
# it (`othello-jax wthor download`'s, $OTHELLO_JAX_WTHOR, or the project's ../shared/data/wthor), train
# supervised:wthor_gpu for its 8-minute budget, score every held-out row, and leave the run, its
# metrics and its network file under $OUT (default runs/).
#
#   device run, from the repository root (mctx and ml_collections travel as wheels in .whl/):
#     python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#         --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit; bash experiments/gpu_wthor.sh
#
# Extra arguments are config overrides (e.g. --config.max_minutes=5).
set -euo pipefail
python="${PYTHON:-python3}"  # the interpreter with JAX (the device image's python3 by default)
out="${OUT:-runs}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [[ -z "${OTHELLO_JAX_WTHOR:-}" && -d ../shared/data/wthor ]]; then
  export OTHELLO_JAX_WTHOR=../shared/data/wthor  # a device session carries the project's copy there
fi
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || true
start=$(date +%s)
"$python" -m experiments.train_supervised --config=experiments/configs/supervised.py:wthor_gpu \
    --workdir="$out/wthor_gpu" --config.data.cache_dir="$out/cache" "$@" 2>&1 | tee "$out/wthor_gpu.log"
"$python" -m othello_jax.cli export-network --checkpoint="$out/wthor_gpu" --out="$out/wthor_conv8bn.msgpack" \
    2>&1 | tee -a "$out/wthor_gpu.log"
rm -rf "$out/cache"  # 137 MB: rebuilt anywhere from the database
echo "gpu_wthor: $(( $(date +%s) - start )) s in all" | tee -a "$out/wthor_gpu.log"
