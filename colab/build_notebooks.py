"""Write the Colab notebooks (train, evaluate, play) from the cell sources below.

    python colab/build_notebooks.py          # rewrite colab/*.ipynb
    python colab/build_notebooks.py --check  # exit 1 if a notebook differs from its source here

Keeping the cells here makes them reviewable as code; the tests check the .ipynb files are
up to date and execute them headlessly with ``OTHELLO_JAX_NOTEBOOK_TEST=1`` (a tiny CPU setup).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
GITHUB_REPO = "othello-jax/othello-jax"  # owner/name of the public repository
TEST_SWITCH = "OTHELLO_JAX_NOTEBOOK_TEST"


def badge(name: str) -> str:
    url = f"https://colab.research.google.com/github/{GITHUB_REPO}/blob/main/colab/{name}"
    return f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})"


def parameters(extra: str) -> str:
    """The first code cell: settings to edit (tagged "parameters" for papermill)."""
    return f'''# Settings: edit, then Runtime > Run all.
import os

REPO_URL = "https://github.com/{GITHUB_REPO}"  # where to pip-install othello-jax from
BRANCH = "main"  # branch, tag or commit to install
# Tests set {TEST_SWITCH}=1: a tiny CPU configuration that finishes in a minute or two.
TEST_MODE = os.environ.get("{TEST_SWITCH}") == "1"
{extra.strip()}
'''


INSTALL = '''# Install the package unless it is already importable (e.g. a local checkout).
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("othello_jax") is None:
    if TEST_MODE:
        raise RuntimeError("test mode installs nothing: make othello_jax importable (PYTHONPATH)")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"git+{REPO_URL}@{BRANCH}"], check=True)
import jax
import othello_jax

print(f"othello-jax {othello_jax.__version__}, jax {jax.__version__}, devices: {jax.devices()}")
'''

TINY_CHECKPOINT = '''def tiny_checkpoint(board_size: int = 4):
    """An untrained tiny network saved like a training run's best checkpoint (test mode)."""
    import tempfile
    from pathlib import Path

    from othello_jax.checkpoint import Checkpoints, network_meta
    from othello_jax.model import NetworkConfig, init_variables, make_network

    config = NetworkConfig.preset("tiny")
    variables = init_variables(make_network(board_size, config), jax.random.PRNGKey(0), board_size)
    workdir = Path(tempfile.mkdtemp(prefix="othello-jax-tiny-"))
    checkpoints = Checkpoints(workdir, keep=1, async_save=False)
    checkpoints.save_best(0, variables, {"board_size": board_size, "network": network_meta(config)})
    checkpoints.close()
    return str(workdir / "best")
'''


# ---------------------------------------------------------------------------------------------
# play.ipynb
# ---------------------------------------------------------------------------------------------
def play_notebook() -> nbformat.NotebookNode:
    cells = [
        new_markdown_cell(f"""# Play othello-jax

{badge("play.ipynb")}

Play a game against a trained checkpoint on a drawn board. Click a square (when ipywidgets is
available, as in Colab) or type moves with `game.move("d3")`. After each of its moves the agent
shows its value estimate and the moves its search visited most; `game.hint()` shows the search's
view of your position."""),
        new_code_cell(parameters('''
CHECKPOINT = "/content/drive/MyDrive/othello-jax/runs/othello8/best"  # a workdir, WORKDIR/best or a step dir
SIMS = 200  # search simulations per agent move
YOUR_COLOR = "black"  # black moves first
if TEST_MODE:
    CHECKPOINT, SIMS = "", 8
'''), metadata={"tags": ["parameters"]}),
        new_code_cell(INSTALL),
        new_markdown_cell("## Load the agent"),
        new_code_cell(TINY_CHECKPOINT + '''

from othello_jax.commands.agent_options import network_player
from othello_jax.game import Othello
from othello_jax.notebook_play import NotebookGame

if TEST_MODE and not CHECKPOINT:
    CHECKPOINT = tiny_checkpoint()
player = network_player(CHECKPOINT, SIMS)
board = Othello(player.size)
game = NotebookGame(player.make_agent(board), board, human=0 if YOUR_COLOR.startswith("b") else 1,
                    analyzer=player.analyzer)
print(f"playing {player.name} on {player.size}x{player.size}; the first search compiles (a few seconds)")
game
'''),
        new_markdown_cell("## Click to play\n\nClick a square to move; the board, the agent's reply and "
                          "its evaluation update below. `pass` is enabled only when you have no move."),
        new_code_cell('''try:
    from IPython.display import display

    board_widget = game.widget()
    display(board_widget)
except ImportError:
    print("ipywidgets is not installed: type your moves in the next cell instead")
'''),
        new_markdown_cell("## Or type your moves\n\nEdit the move and run the cell again; `game.undo()` "
                          "takes back your last move, `game.hint()` shows what the search thinks."),
        new_code_cell('''MOVE = "f5"
game.move(MOVE)
'''),
        new_code_cell('''if TEST_MODE:  # a scripted game to the end: the last legal move, passing when forced
    from othello_jax.game import square_name

    def scripted_move() -> str:
        legal = game.session.legal_actions()
        return "pass" if legal == [board.pass_action] else square_name(legal[-1], board.size)

    if game.square_buttons:  # the first move by clicking the widget's button
        played = len(game.session.actions)
        game.square_buttons[game.session.legal_actions()[-1]].click()
        assert len(game.session.actions) > played, game.message
    while not game.session.is_over:
        game.move(scripted_move())
    print(game.status())
    print(game.agent_report())
    game.undo().hint()
    assert game.hint_analysis is not None and not game.session.is_over
game
'''),
    ]
    return _notebook(cells, accelerator=None)


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------
def _notebook(cells: list, accelerator: str | None) -> nbformat.NotebookNode:
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["colab"] = {"provenance": [], "toc_visible": True}
    if accelerator:
        nb.metadata["accelerator"] = accelerator
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index}"
    return nb


NOTEBOOKS = {
    "play.ipynb": play_notebook,
}


def render_all() -> dict[str, str]:
    """File name -> notebook JSON text."""
    return {name: nbformat.writes(build()) + "\n" for name, build in NOTEBOOKS.items()}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name, text in render_all().items():
        path = HERE / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python colab/build_notebooks.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
