# Finds the Python 3.13 of the Colab-image leg of scripts/test.sh (sourced there, and by
# tests/test_test_script.py). Needs nothing but bash and the interpreters it tries.
#
#   colab_leg_python   prints the interpreter and returns 0; returns 1 when there is none (one line
#                      on stderr: the leg is skipped), or 2 when the leg cannot run and must not be
#                      skipped (COLAB_PYTHON wrong, or none found under CI=true; one line on stderr).
#
# Where it looks, in order: $COLAB_PYTHON (when set it must be a Python 3.13), `python3.13` on
# PATH, then pyenv's versions (`pyenv root`, else $PYENV_ROOT, else ~/.pyenv) 3.13*, newest first.

is_python313() {  # is_python313 PATH: true when PATH runs and is Python 3.13
  [ -x "$1" ] && [ "$("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = 3.13 ]
}

find_colab_python() {  # prints a Python 3.13; returns 1 when none is found, 2 when COLAB_PYTHON is wrong
  local candidate root
  local -a versions
  if [ -n "${COLAB_PYTHON:-}" ]; then
    if ! [ -x "$COLAB_PYTHON" ]; then
      echo "error: COLAB_PYTHON=$COLAB_PYTHON is not an executable file" >&2
      return 2
    fi
    if ! is_python313 "$COLAB_PYTHON"; then
      echo "error: COLAB_PYTHON=$COLAB_PYTHON is not Python 3.13 (the Colab image's)" >&2
      return 2
    fi
    echo "$COLAB_PYTHON"
    return 0
  fi
  candidate=$(command -v python3.13 || true)  # a pyenv shim of a version not selected fails the check
  if [ -n "$candidate" ] && is_python313 "$candidate"; then
    echo "$candidate"
    return 0
  fi
  if command -v pyenv >/dev/null 2>&1; then
    root=$(pyenv root 2>/dev/null || true)
  fi
  root=${root:-${PYENV_ROOT:-$HOME/.pyenv}}
  shopt -s nullglob
  versions=("$root"/versions/3.13*/bin/python3.13)
  shopt -u nullglob
  local best="" best_patch=-1 name patch
  for candidate in ${versions[@]+"${versions[@]}"}; do  # the newest patch release that runs
    name=${candidate%/bin/python3.13}
    name=${name##*/}
    patch=${name#3.13.}
    patch=${patch%%[!0-9]*}
    if [ "${patch:-0}" -gt "$best_patch" ] && is_python313 "$candidate"; then
      best=$candidate
      best_patch=${patch:-0}
    fi
  done
  [ -n "$best" ] || return 1
  echo "$best"
}

colab_leg_python() {  # find_colab_python, with a missing one a skip (one line), or an error under CI=true
  local status=0
  find_colab_python || status=$?
  if [ "$status" -eq 1 ]; then
    if [ "${CI:-}" = true ]; then
      echo "error: no Python 3.13 for the Colab-image leg (CI=true runs it): set COLAB_PYTHON, put python3.13 on PATH, or pyenv install 3.13" >&2
      return 2
    fi
    echo "== the Colab-image leg will be skipped: no Python 3.13 found (set COLAB_PYTHON, put python3.13 on PATH, or pyenv install 3.13)" >&2
  fi
  return "$status"
}
