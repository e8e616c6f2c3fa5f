"""The architecture: a light public API, and the import contract catching an upward import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_public_api_resolves_lazily():
    code = ("import sys, othello_jax\n"
            "assert 'mctx' not in sys.modules and 'orbax.checkpoint' not in sys.modules, 'import is not light'\n"
            "names = [n for n in othello_jax.__all__ if n != '__version__']\n"
            "assert all(getattr(othello_jax, n) is not None for n in names)\n"
            "print(len(names))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.strip()) >= 10


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(exe), "--no-cache"], cwd=tree, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree)})


def test_import_contract_holds_and_catches_an_upward_import(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "othello_jax", tree / "othello_jax", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tree / "pyproject.toml")
    kept = lint_imports(tree)
    assert kept.returncode == 0, kept.stdout[-3000:]
    rules = tree / "othello_jax" / "game" / "rules.py"
    upward = "\n\ndef _upward():\n    from othello_jax.training import loop\n    return loop\n"
    rules.write_text(rules.read_text() + upward)
    broken = lint_imports(tree)
    assert broken.returncode != 0
    assert "othello_jax.game is not allowed to import othello_jax.training" in broken.stdout, broken.stdout[-3000:]


def test_import_contract_catches_a_cycle_inside_a_package(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "othello_jax", tree / "othello_jax", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tree / "pyproject.toml")
    base = tree / "othello_jax" / "agents" / "base.py"  # specs imports base; base importing specs is a cycle
    cycle = "\n\ndef _cycle():\n    from othello_jax.agents import specs\n    return specs\n"
    base.write_text(base.read_text() + cycle)
    broken = lint_imports(tree)
    assert broken.returncode != 0
    assert "no import cycles between the modules of a package BROKEN" in broken.stdout, broken.stdout[-3000:]
