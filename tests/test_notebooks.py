"""The Colab notebooks run headlessly, top to bottom, in their tiny test configuration, and match
their generator. Any cell error fails the test (nbclient raises CellExecutionError)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
COLAB = REPO / "colab"
NOTEBOOKS = ["play.ipynb", "train.ipynb", "evaluate.ipynb"]


@pytest.fixture(scope="module")
def notebook_dir(tmp_path_factory) -> Path:
    """Shared by the notebooks, so evaluate rates the run that train made (it trains one if missing)."""
    return tmp_path_factory.mktemp("notebooks")


def execute(name: str, directory: Path, monkeypatch) -> nbformat.NotebookNode:
    monkeypatch.setenv("OTHELLO_JAX_NOTEBOOK_TEST", "1")
    monkeypatch.setenv("OTHELLO_JAX_NOTEBOOK_WORKDIR", str(directory))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    notebook = nbformat.read(COLAB / name, as_version=4)
    client = NotebookClient(notebook, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(directory)}})
    client.execute()
    return notebook


def text_outputs(notebook: nbformat.NotebookNode) -> str:
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                parts.append(output["text"])
            elif "data" in output:
                parts.append(str(output["data"].get("text/plain", "")))
    return "\n".join(parts)


def test_notebooks_match_their_generator():
    result = subprocess.run([sys.executable, str(COLAB / "build_notebooks.py"), "--check"],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr


def test_notebooks_have_a_parameters_cell_and_install_from_a_branch():
    for name in NOTEBOOKS:
        notebook = nbformat.read(COLAB / name, as_version=4)
        code = [cell for cell in notebook.cells if cell.cell_type == "code"]
        assert "parameters" in code[0].metadata.get("tags", []), name
        assert "BRANCH =" in code[0].source and "OTHELLO_JAX_NOTEBOOK_TEST" in code[0].source
        assert any("pip" in cell.source and "{BRANCH}" in cell.source for cell in code), name


@pytest.mark.slow  # about a minute: compiles and runs three training iterations
def test_train_notebook(notebook_dir, monkeypatch):
    """On 2 CPU devices (a multi-device runtime): train, lose the runtime, restore from the mirror and
    resume with an iteration left."""
    monkeypatch.setenv("JAX_NUM_CPU_DEVICES", "2")
    out = text_outputs(execute("train.ipynb", notebook_dir, monkeypatch))
    assert "2 cpu device(s): config tiny_test, 4x4, 2 iterations" in out
    assert "[2/2]" in out  # progress lines
    assert "mirrored" in out and (notebook_dir / "run-mirror" / "metrics.jsonl").is_file()
    assert f"resumed {notebook_dir / 'run'} at iteration 2" in out  # after restoring the deleted run from the mirror
    assert "[3/3]" in out and "3 iterations logged" in out
    assert (notebook_dir / "run" / "curves.png").is_file()


@pytest.mark.slow  # about a minute: trains a run when the train notebook did not, then six matches
def test_evaluate_notebook(notebook_dir, monkeypatch):
    out = text_outputs(execute("evaluate.ipynb", notebook_dir, monkeypatch))
    last = 3 if (notebook_dir / "run" / "checkpoints" / "3").is_dir() else 2  # trained by the train notebook or here
    assert f"players: iter 1, iter {last}, random, engine" in out
    assert "iter 1 vs engine:" in out  # the GTP engine took part
    assert "95% interval" in out and "strongest checkpoint: iter" in out
    assert (notebook_dir / "run" / "elo.png").is_file()


def test_play_notebook(notebook_dir, monkeypatch):
    out = text_outputs(execute("play.ipynb", notebook_dir, monkeypatch))
    assert "Game over:" in out
    assert "took back your last move" in out
    assert "Agent's value estimate" in out  # the search's moves, then the solver's (SOLVE=6 in the test)
    assert ",solve=6,solver=c on 4x4" in out and "perfect play: the exact endgame solver chose this move" in out
    assert "illegal: square 'f5' is off the 4x4 board" in out  # typed input is checked, not raised


def test_workdir_mirror_sync_and_restore(tmp_path):
    from othello_jax.training import mirror as workdir_mirror

    run, mirror, fresh = tmp_path / "run", tmp_path / "mirror", tmp_path / "fresh"
    for relative in ["checkpoints/1/a", "checkpoints/2/a", "checkpoints/3.orbax-checkpoint-tmp-9/a",
                     "best/2/a", "metrics.jsonl"]:
        (run / relative).parent.mkdir(parents=True, exist_ok=True)
        (run / relative).write_text(relative)
    assert workdir_mirror.sync(run, mirror) == 4
    assert sorted(p.name for p in (mirror / "checkpoints").iterdir()) == ["1", "2"]  # no unfinished save
    assert workdir_mirror.sync(run, mirror) == 0  # nothing changed
    # the run keeps the latest checkpoints only: the mirror follows
    import shutil

    shutil.rmtree(run / "checkpoints" / "1")
    (run / "checkpoints" / "3").mkdir()
    (run / "checkpoints" / "3" / "a").write_text("three")
    (run / "metrics.jsonl").write_text("metrics, longer now")
    assert workdir_mirror.sync(run, mirror) == 2
    assert sorted(p.name for p in (mirror / "checkpoints").iterdir()) == ["2", "3"]
    assert (mirror / "metrics.jsonl").read_text() == "metrics, longer now"
    # a fresh runtime gets the run back; a workdir with checkpoints is never overwritten
    assert workdir_mirror.restore(mirror, fresh)
    assert (fresh / "checkpoints" / "3" / "a").read_text() == "three"
    assert not workdir_mirror.restore(mirror, run)
    assert not workdir_mirror.restore(tmp_path / "empty", tmp_path / "other")
