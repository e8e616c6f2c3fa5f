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
    upward = "\n\ndef _upward():\n    from othello_jax.training.runner import loop\n    return loop\n"
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


def test_a_room_of_training_importing_a_room_above_it_breaks_the_contract(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "othello_jax", tree / "othello_jax", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tree / "pyproject.toml")
    samples = tree / "othello_jax" / "training" / "compiled" / "samples.py"
    upward = "\n\ndef _upward():\n    from othello_jax.training.runner import metrics\n    return metrics\n"
    samples.write_text(samples.read_text() + upward)
    broken = lint_imports(tree)
    assert broken.returncode != 0
    words = " ".join(broken.stdout.split())  # lint-imports wraps its lines at the terminal's width
    assert "othello_jax.training.compiled is not allowed to import othello_jax.training.runner" in words, \
        broken.stdout[-3000:]


def test_no_module_or_package_name_is_used_twice_in_the_package():
    package = REPO / "othello_jax"
    names = [p.stem for p in package.rglob("*.py") if p.name != "__init__.py" and "__pycache__" not in p.parts]
    names += [p.parent.name for p in package.rglob("__init__.py") if p.parent != package]  # packages
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"used twice: {twice}"


def test_no_room_of_training_holds_more_than_ten_modules():
    rooms = [p for p in (REPO / "othello_jax" / "training").iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert {r.name for r in rooms} == {"settings", "compiled", "runner", "supervised"}
    assert not [p for p in (REPO / "othello_jax" / "training").glob("*.py") if p.name != "__init__.py"]
    for room in rooms:
        modules = [p for p in room.glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= 10, (room.name, sorted(p.name for p in modules))


def test_the_compiled_iteration_manages_no_processes_threads_or_files():
    """Device code and host process management live in different rooms (compiled/ vs runner/)."""
    import ast
    host_only = {"threading", "multiprocessing", "concurrent", "subprocess", "signal", "os", "shutil"}
    for path in (REPO / "othello_jax" / "training" / "compiled").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not {n.split(".")[0] for n in names} & host_only, (path.name, names)
