"""The Colab notebooks run headlessly, top to bottom, and match their generator: as shipped (play
and evaluate with every default, train with its defaults shortened through its settings cell, as
a user would edit it) and in their tiny test configuration (OTHELLO_JAX_NOTEBOOK_TEST=1). Any cell
error fails the test (nbclient raises CellExecutionError).

Only the CPU branch runs here: the accelerator branches (train's TPU and GPU configs, evaluate's
accelerator sizes, Colab's Drive and TensorBoard) need a GPU/TPU runtime or Colab itself, which
CI does not have."""

from __future__ import annotations

import ast
import os
import re
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


def execute(name: str, directory: Path, monkeypatch, test_mode: bool = True,
            settings: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """Run a notebook in ``directory`` (its working directory); ``settings`` rewrites lines of its
    settings cell (old text -> new text, each found exactly once), as a user edits them."""
    if test_mode:
        monkeypatch.setenv("OTHELLO_JAX_NOTEBOOK_TEST", "1")
        monkeypatch.setenv("OTHELLO_JAX_NOTEBOOK_WORKDIR", str(directory))
    else:
        monkeypatch.delenv("OTHELLO_JAX_NOTEBOOK_TEST", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    notebook = nbformat.read(COLAB / name, as_version=4)
    settings_cell = next(cell for cell in notebook.cells if cell.cell_type == "code")
    for old, new in (settings or {}).items():
        assert settings_cell.source.count(old) == 1, old
        settings_cell.source = settings_cell.source.replace(old, new)
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
        assert any("use_compilation_cache()" in cell.source for cell in code), name


def test_train_notebook_names_shipped_configs():
    """Each platform's config (the accelerator ones are never run here: CI has no GPU/TPU) ships."""
    source = next(cell.source for cell in nbformat.read(COLAB / "train.ipynb", as_version=4).cells
                  if "PLATFORM_CONFIGS = " in cell.source)
    table = ast.literal_eval(re.search(r"PLATFORM_CONFIGS = (\{.*?\})", source).group(1))
    assert set(table) == {"tpu", "gpu", "cpu"}
    for name in table.values():
        assert (REPO / "experiments" / "configs" / f"{name}.py").is_file(), name


def test_train_notebook_shows_tensorboard_before_training():
    """In Colab the TensorBoard extension shows the run's event files (written into WORKDIR) live;
    elsewhere the cell prints how to view them (executed headlessly by the train notebook tests)."""
    code = [cell.source for cell in nbformat.read(COLAB / "train.ipynb", as_version=4).cells
            if cell.cell_type == "code"]
    board = next(i for i, source in enumerate(code) if "%load_ext tensorboard" in source)
    assert "%tensorboard --logdir {WORKDIR}" in code[board] and "if IN_COLAB:" in code[board]
    assert board < next(i for i, source in enumerate(code) if "loop.run(config, WORKDIR" in source)


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


@pytest.mark.slow  # a minute of CI's first leg; the Colab-image leg (Colab's versions, where the notebooks run) has it
def test_play_notebook(notebook_dir, monkeypatch):
    out = text_outputs(execute("play.ipynb", notebook_dir, monkeypatch))
    assert "Game over:" in out
    assert "took back your last move" in out
    assert "Agent's value estimate" in out  # the search's moves, then the solver's (SOLVE=6 in the test)
    assert ",solve=6,solver=c on 4x4" in out and "perfect play: the exact endgame solver chose this move" in out
    assert "illegal: square 'f5' is off the 4x4 board" in out  # typed input is checked, not raised


@pytest.mark.slow  # as above: the Colab-image leg of scripts/test.sh runs every notebook test
def test_play_notebook_as_shipped(tmp_path, monkeypatch):
    """Every default: the shipped 6x6 network at 200 simulations, the exact endgame, the clickable
    board built, and the typed-move cell, left empty, plays the agent's suggestion for the user (a
    legal move), then the agent replies. Compiled programs go to the notebook's cache directory."""
    cache = tmp_path / "xla"
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)  # the tests' shared cache: not here
    monkeypatch.setenv("OTHELLO_JAX_XLA_CACHE", str(cache))
    out = text_outputs(execute("play.ipynb", tmp_path, monkeypatch, test_mode=False))
    assert "playing network, 200 sims,solve=" in out and "on 6x6" in out
    assert f"compiled programs kept in {cache}" in out and any(cache.iterdir())
    assert "illegal" not in out
    record = re.findall(r"Record: (\S+)", out)[-1]
    assert record[:2] in ("c2", "b3", "e4", "d5") and len(record) == 4, record  # black's openings on 6x6
    assert "Agent's value estimate" in out


@pytest.mark.slow  # ~7 minutes on the loaded 2-core machine (train 3, evaluate 4): compiling othello6_cpu's
# training and four 6x6 matches with a searching network; the Colab-image leg of scripts/test.sh runs it
def test_train_then_evaluate_notebooks_as_shipped(tmp_path, monkeypatch):
    """train.ipynb as shipped on a CPU runtime (othello6_cpu), shortened only through its settings
    cell as a user would (one iteration of 16 games, no in-run evaluation), then evaluate.ipynb with
    every default rating that run (runs/othello in the working directory, where train.ipynb leaves
    it outside Colab) at its CPU sizes, compiled with XLA's optimisations as users' runs are (its
    matches run ~3x faster so)."""
    # the CPU branch only: the TPU/GPU configs need an accelerator runtime, which CI does not have
    shorter = {"OVERRIDES = {}": 'OVERRIDES = {"iterations": 1, "selfplay.num_games": 16, "eval.every": 0}'}
    out = text_outputs(execute("train.ipynb", tmp_path, monkeypatch, test_mode=False, settings=shorter))
    run = tmp_path / "runs" / "othello"
    assert "1 cpu device(s): config othello6_cpu, 6x6, 1 iterations" in out
    # outside Colab the TensorBoard cell prints how to view the run (no server); the events are there
    assert f"TensorBoard: run `tensorboard --logdir {run}`" in out and any(run.glob("events.out.tfevents.*"))
    assert "[1/1]" in out and "1 iterations logged" in out and (run / "curves.png").is_file()
    monkeypatch.setenv("JAX_DISABLE_MOST_OPTIMIZATIONS", "0")
    out = text_outputs(execute("evaluate.ipynb", tmp_path, monkeypatch, test_mode=False))
    assert "1 checkpoints on 6x6; rating iter 1" in out
    assert "16 games per pairing, 16 simulations per move for the checkpoints" in out  # the CPU sizes
    assert "players: iter 1, random, greedy, alphabeta:depth=3" in out
    assert "strongest checkpoint: iter 1" in out and (run / "elo.png").is_file()


def test_workdir_mirror_sync_and_restore(tmp_path):
    from othello_jax.training.runner import mirror as workdir_mirror

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
