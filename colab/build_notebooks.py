"""Write the Colab notebooks (train, evaluate, play) from the cell sources below.

    python colab/build_notebooks.py          # rewrite colab/*.ipynb
    python colab/build_notebooks.py --check  # exit 1 if a notebook differs from its source here

Keeping the cells here makes them reviewable as code; the tests check the .ipynb files are
up to date and execute them headlessly on CPU: as shipped (the train notebook shortened through
its settings cell) and with OTHELLO_JAX_NOTEBOOK_TEST=1 (a tiny 4x4 setup).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
GITHUB_REPO = "othello-jax/othello-jax"  # owner/name of the public repository: the badges and REPO_URL
TEST_SWITCH = "OTHELLO_JAX_NOTEBOOK_TEST"


def badge(name: str) -> str:
    url = f"https://colab.research.google.com/github/{GITHUB_REPO}/blob/main/colab/{name}"
    return f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})"


def parameters(extra: str) -> str:
    """The first code cell: settings to edit (tagged "parameters" for papermill)."""
    return f'''# Settings: edit, then Runtime > Run all.
import os
import sys

REPO_URL = "https://github.com/{GITHUB_REPO}"  # where to pip-install othello-jax from (a fork: its URL)
BRANCH = "main"  # branch, tag or commit to install
IN_COLAB = "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ  # Colab's kernel, Colab's runtime
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
from othello_jax.cli import use_compilation_cache

# Compiled programs are kept on disk (~/.cache/othello-jax/xla; OTHELLO_JAX_XLA_CACHE: another
# directory, or off), so running the notebook again in this runtime skips most compiling.
print(f"othello-jax {othello_jax.__version__}, jax {jax.__version__}, devices: {jax.devices()}; "
      f"compiled programs kept in {use_compilation_cache() or 'memory only'}")
'''

def mount_drive(variable: str) -> str:
    """A cell mounting Google Drive when ``variable`` points into it (Colab only)."""
    return f'''# Mount Google Drive if {variable} lives there (Colab asks for permission once).
if str({variable}).startswith("/content/drive"):
    try:
        from google.colab import drive

        drive.mount("/content/drive")
    except ImportError:
        print("not running in Colab: Google Drive is not available")
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

Play a game against a trained network on a drawn board (by default the 6x6 network that ships
with the package, so nothing needs training first; `"builtin:8x8-expert"` is the strongest 8x8
one; point `CHECKPOINT` at your own run's workdir, `WORKDIR/best` or a `.msgpack` file to play it
instead). Click a square (when ipywidgets is available, as in Colab) or type moves with
`game.move("d3")`. After each of its moves the agent
shows its value estimate and the moves its search visited most; `game.hint()` shows the search's
view of your position. Like Edax and Egaroucid, it plays the last empty squares perfectly
with the exact solver (`SOLVE` sets how many; 0 turns it off)."""),
        new_code_cell(parameters('''
CHECKPOINT = "builtin:6x6"  # shipped: "builtin:6x6", the strongest 8x8 "builtin:8x8-expert"
# or a run's workdir: "/content/drive/MyDrive/othello-jax/runs/othello"
SIMS = 200  # search simulations per agent move
YOUR_COLOR = "black"  # black moves first
SOLVE = None  # exact endgame: positions with at most SOLVE empties (None: the board's default, 0: off)
if TEST_MODE:
    CHECKPOINT, SIMS, SOLVE = "", 8, 6
'''), metadata={"tags": ["parameters"]}),
        new_code_cell(INSTALL),
        new_code_cell(mount_drive("CHECKPOINT")),
        new_markdown_cell("## Load the agent"),
        new_code_cell(TINY_CHECKPOINT + '''

from othello_jax.commands.agent_options import checkpoint_player, with_endgame_solve
from othello_jax.game import Othello
from othello_jax.interface.notebook_play import NotebookGame

if TEST_MODE and not CHECKPOINT:
    CHECKPOINT = tiny_checkpoint()
player = with_endgame_solve(checkpoint_player(CHECKPOINT, SIMS), SOLVE)
board = Othello(player.size)
game = NotebookGame(player.make_agent(board), board, human=0 if YOUR_COLOR.startswith("b") else 1,
                    analyzer=player.analyzer, commentary=player.commentary)
print(f"playing {player.name} on {player.size}x{player.size}; the first search compiles: "
      "~30 s on a quiet 2-core CPU, up to ~2 minutes on a busy one, seconds on a GPU; faster once cached")
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
        new_markdown_cell("## Or type your moves\n\nType a move (`\"c2\"`, `\"pass\"`) and run the cell "
                          "again; left empty, it plays the move the agent would play for you. `game.undo()` "
                          "takes back your last move, `game.hint()` shows what the search thinks."),
        new_code_cell('''MOVE = ""  # e.g. "c2" (6x6) or "d3" (8x8); empty: the agent's suggestion for you
game.move(MOVE or game.suggested_move())
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
    else:
        game.move(scripted_move())
    print(game.agent_report())  # the search's move: more than SOLVE empties were left
    game.move("f5")  # typed input is checked, not raised
    print(game.message)
    while not game.session.is_over:
        game.move(scripted_move())
    print(game.status())
    print(game.agent_report())  # the solver's move
    game.undo().hint()
    assert game.hint_analysis is not None and not game.session.is_over
game
'''),
    ]
    return _notebook(cells, accelerator=None)


# ---------------------------------------------------------------------------------------------
# train.ipynb
# ---------------------------------------------------------------------------------------------
TEST_WORKDIR = 'os.path.join(os.environ.get("OTHELLO_JAX_NOTEBOOK_WORKDIR", "/tmp/othello-jax-notebooks"), "run")'


def train_notebook() -> nbformat.NotebookNode:
    cells = [
        new_markdown_cell(f"""# Train othello-jax

{badge("train.ipynb")}

Trains an AlphaZero Othello agent from zero: self-play with Monte-Carlo tree search, a replay
buffer and gradient steps, all in one compiled function. Pick a TPU runtime (Runtime > Change
runtime type) for 8x8; a GPU works, and on CPU the notebook trains 6x6.

The run lives in a local workdir and is mirrored to Google Drive, so **running the notebook
again after a disconnect resumes** from the last checkpoint."""),
        new_code_cell(parameters(f'''
WORKDIR = "/content/runs/othello" if IN_COLAB else "runs/othello"  # the run's directory (Colab: its fast local disk)
# a copy of the run on Google Drive, kept up to date ("" keeps the run local only)
DRIVE_MIRROR = "/content/drive/MyDrive/othello-jax/runs/othello" if IN_COLAB else ""
CONFIG = "auto"  # "auto" picks by platform, or a file name in experiments/configs/ (e.g. "othello6_cpu")
OVERRIDES = {{}}  # any setting, e.g. {{"iterations": 200, "max_minutes": 10, "search.num_simulations": 64}}
if TEST_MODE:
    WORKDIR = {TEST_WORKDIR}
    DRIVE_MIRROR = WORKDIR + "-mirror"  # a local folder stands in for Google Drive
    CONFIG, OVERRIDES = "tiny_test", {{"iterations": 2}}
'''), metadata={"tags": ["parameters"]}),
        new_code_cell(INSTALL),
        new_markdown_cell("## Platform and configuration"),
        new_code_cell('''import importlib

from othello_jax.commands.configs import shipped_configs

devices = jax.devices()
platform = devices[0].platform
# the config for each platform, in experiments/configs/ (othello8_tpu splits over 1 or 8 TPU devices)
PLATFORM_CONFIGS = {"tpu": "othello8_tpu", "gpu": "othello8_gpu", "cpu": "othello6_cpu"}
name = PLATFORM_CONFIGS.get(platform, "othello6_cpu") if CONFIG == "auto" else CONFIG
if name not in shipped_configs():
    raise ValueError(f"no config named {name!r} in experiments/configs/; choose from {', '.join(shipped_configs())}")
config = importlib.import_module(f"experiments.configs.{name}").get_config()
config.update_from_flattened_dict(OVERRIDES)
print(f"{len(devices)} {platform} device(s): config {name}, {config.board_size}x{config.board_size}, "
      f"{config.iterations} iterations")
'''),
        new_markdown_cell("## Google Drive mirror\n\nIn Colab the Drive is mounted and, when the local "
                          "workdir is empty (a fresh runtime), the run is copied back from Drive first."),
        new_code_cell('''from othello_jax.training.runner import mirror as workdir_mirror

if DRIVE_MIRROR.startswith("/content/drive"):
    try:
        from google.colab import drive

        drive.mount("/content/drive")
    except ImportError:
        print("not running in Colab: no Google Drive, the run stays local")
        DRIVE_MIRROR = ""
if DRIVE_MIRROR and workdir_mirror.restore(DRIVE_MIRROR, WORKDIR):
    print(f"restored {WORKDIR} from {DRIVE_MIRROR}")
'''),
        new_markdown_cell("## TensorBoard\n\nThe training below writes TensorBoard event files into "
                          "`WORKDIR` as it goes; in Colab they are shown here, live (refresh with the "
                          "panel's reload button)."),
        new_code_cell('''if IN_COLAB:  # Colab ships TensorBoard and its notebook extension
    %load_ext tensorboard
    %tensorboard --logdir {WORKDIR}
else:
    print(f"TensorBoard: run `tensorboard --logdir {os.path.abspath(WORKDIR)}` in a terminal "
          "(pip install tensorboard) and open http://localhost:6006")
'''),
        new_markdown_cell("## Train\n\nOne progress line per iteration. Every checkpoint is copied to "
                          "Drive as soon as it is written (a recycled runtime gets no warning). Interrupting "
                          "is safe: the iteration in flight finishes and is saved; run this cell again to "
                          "resume."),
        new_code_cell('''from othello_jax.training.runner import loop

on_checkpoint = workdir_mirror.checkpoint_hook(WORKDIR, DRIVE_MIRROR) if DRIVE_MIRROR else None
try:
    last = loop.run(config, WORKDIR, on_checkpoint=on_checkpoint)
except loop.TrainingInterrupted as stop:
    print(stop)
finally:
    if DRIVE_MIRROR:
        print(f"mirrored {workdir_mirror.sync(WORKDIR, DRIVE_MIRROR)} changed files to {DRIVE_MIRROR}")
'''),
        new_code_cell('if TEST_MODE:  # a fresh runtime: the local run is gone, '
                      '''the mirror brings it back, training resumes
    import shutil

    shutil.rmtree(WORKDIR)
    assert workdir_mirror.restore(DRIVE_MIRROR, WORKDIR)
    config.iterations += 1  # the run extended: it resumes at its last checkpoint and trains one more
    last = loop.run(config, WORKDIR, on_checkpoint=on_checkpoint)
'''),
        new_markdown_cell("## Curves\n\nLosses, policy entropy, throughput and buffer fill per iteration, "
                          "then the Elo difference to each evaluation opponent (from the periodic arena "
                          "evaluations, when the config has them)."),
        new_code_cell('''from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Image, display

from othello_jax.evaluation.arena import score_to_elo
from othello_jax.training.runner.metrics import plot, read_records

display(Image(filename=str(plot([WORKDIR], Path(WORKDIR) / "curves.png"))))
records = read_records(WORKDIR)
opponents = sorted({k for r in records for k, v in r.items() if k.startswith("eval/") and v is not None})
if opponents:
    games = int(config.eval.games)
    for key in opponents:
        points = [(r["iteration"], score_to_elo(r[key], games)) for r in records if r.get(key) is not None]
        plt.plot(*zip(*points), marker="o", label=key[len("eval/"):])
    plt.xlabel("iteration"); plt.ylabel("Elo difference to the opponent"); plt.legend(); plt.grid(alpha=0.3)
    plt.show()
else:
    print("no arena evaluations in this run yet (config.eval.every)")
print(f"{len(records)} iterations logged; last: " + ", ".join(f"{k} {records[-1][k]:.3g}" for k in
      ("loss", "policy_entropy", "positions_per_s") if k in records[-1]))
'''),
        new_markdown_cell(f"Next: rate the checkpoints in [evaluate.ipynb]"
                          f"(https://colab.research.google.com/github/{GITHUB_REPO}/blob/main/colab/evaluate.ipynb) "
                          f"and play the best one in [play.ipynb]"
                          f"(https://colab.research.google.com/github/{GITHUB_REPO}/blob/main/colab/play.ipynb)."),
    ]
    return _notebook(cells, accelerator="TPU")


# ---------------------------------------------------------------------------------------------
# evaluate.ipynb
# ---------------------------------------------------------------------------------------------
def evaluate_notebook() -> nbformat.NotebookNode:
    cells = [
        new_markdown_cell(f"""# Evaluate othello-jax checkpoints

{badge("evaluate.ipynb")}

Loads the checkpoints of a training run, plays them against each other and against baselines
(random, greedy, alpha-beta, and an external engine such as Edax over GTP if you have one),
fits Elo ratings by maximum likelihood and plots Elo over training. Every opening is played
twice with colours swapped."""),
        new_code_cell(parameters(f'''
# a training run (its checkpoints/ folder): train.ipynb's copy on Google Drive in Colab, its local run elsewhere
WORKDIR = "/content/drive/MyDrive/othello-jax/runs/othello" if IN_COLAB else "runs/othello"
MAX_CHECKPOINTS = 6  # rate at most this many checkpoints, spread over the run
SIMS = None  # search simulations per move for the checkpoints (0: raw network policy; None: 32, 16 on CPU)
GAMES = None  # games per pairing, even: each opening twice (None: 64, 16 on CPU)
BASELINES = ["random", "greedy", "alphabeta:depth=3"]
ENGINE_CMD = ""  # an external GTP engine, e.g. "edax -gtp -l 4" (installed on this machine)
OPENINGS_FILE = ""  # e.g. an XOT list; empty: generated near-even openings
ANCHOR = "random"  # the player rated 0
if TEST_MODE:
    WORKDIR = {TEST_WORKDIR}  # the train notebook's test run (trained here if missing)
    MAX_CHECKPOINTS, SIMS, GAMES, BASELINES = 2, 0, 2, ["random"]
    ENGINE_CMD = f"{{sys.executable}} -m othello_jax.cli engine --agent=greedy --no-solve"  # our own engine over GTP
'''), metadata={"tags": ["parameters"]}),
        new_code_cell(INSTALL),
        new_code_cell(mount_drive("WORKDIR")),
        new_markdown_cell("## Checkpoints"),
        new_code_cell('''from pathlib import Path

import numpy as np

from othello_jax.checkpoint import load_agent_variables

if TEST_MODE and not (Path(WORKDIR) / "checkpoints").is_dir():  # a two-iteration run to rate
    from experiments.configs import tiny_test
    from othello_jax.training.runner import loop

    config = tiny_test.get_config()
    config.iterations = 2
    loop.run(config, WORKDIR)
steps = sorted(int(p.name) for p in (Path(WORKDIR).expanduser() / "checkpoints").glob("*") if p.name.isdigit())
if not steps:
    raise FileNotFoundError(f"no checkpoints under {WORKDIR}/checkpoints: train a run with train.ipynb first, "
                            "or set WORKDIR to one")
chosen = sorted({steps[int(i)] for i in np.linspace(0, len(steps) - 1, min(MAX_CHECKPOINTS, len(steps)))})
checkpoints = {f"iter {step}": str(Path(WORKDIR).expanduser() / "checkpoints" / str(step)) for step in chosen}
_, _, BOARD_SIZE = load_agent_variables(next(iter(checkpoints.values())))
print(f"{len(steps)} checkpoints on {BOARD_SIZE}x{BOARD_SIZE}; rating {', '.join(checkpoints)}")
'''),
        new_markdown_cell("## Players"),
        new_code_cell('''from othello_jax.agents import parse_agent
from othello_jax.game import Othello

ON_CPU = jax.devices()[0].platform == "cpu"  # a CPU runtime: fewer games and simulations
SIMS = (16 if ON_CPU else 32) if SIMS is None else SIMS
GAMES = (16 if ON_CPU else 64) if GAMES is None else GAMES
print(f"{GAMES} games per pairing, {SIMS} simulations per move for the checkpoints")
board = Othello(BOARD_SIZE)
agents = {name: parse_agent(f"net:ckpt={path},sims={SIMS}", board) for name, path in checkpoints.items()}
for spec in BASELINES:
    agents[spec] = parse_agent(spec, board)
if ENGINE_CMD:
    agents["engine"] = parse_agent(f'gtp:cmd="{ENGINE_CMD}"', board)
print("players:", ", ".join(agents))
'''),
        new_markdown_cell("## Matches and Elo\n\nEach checkpoint plays the next one and every baseline "
                          "(a ladder, much cheaper than a round robin); ratings are fitted jointly."),
        new_code_cell('''from othello_jax.evaluation import arena, openings
from othello_jax.evaluation.elo import rate_agents

key = jax.random.PRNGKey(0)
lines = openings.sample_openings(openings.load_openings(OPENINGS_FILE, board), GAMES // 2, key) if OPENINGS_FILE \\
    else arena.match_openings(board, GAMES, key)
try:
    ratings, pairings = rate_agents(agents, board, GAMES, jax.random.PRNGKey(1), anchor=ANCHOR,
                                    series=list(checkpoints), lines=lines, report=print)
finally:
    for agent in agents.values():
        if agent.close is not None:
            agent.close()
print()
print(ratings.table())
'''),
        new_code_cell('''from IPython.display import Image, display

from othello_jax.evaluation.elo import plot_elo

series = {name: int(name.split()[-1]) for name in checkpoints}
display(Image(filename=str(plot_elo(ratings, series, Path(WORKDIR).expanduser() / "elo.png"))))
best = max(checkpoints, key=lambda name: ratings[name])
print(f"strongest checkpoint: {best} ({checkpoints[best]}), Elo {ratings[best]:+.0f} vs {ANCHOR}")
'''),
    ]
    return _notebook(cells, accelerator="TPU")


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
    "train.ipynb": train_notebook,
    "evaluate.ipynb": evaluate_notebook,
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
