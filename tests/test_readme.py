"""The README as a user meets it: its links resolve, its pictures are what the figures script
makes from the committed files, and every command in its code blocks is run by a test or is named
as one that needs a GPU, a TPU, several hosts or hours.

Links: every relative link and #anchor in README.md, and in experiments/RESULTS.md's "Where
things stand", names a file that exists and, with an anchor, a heading of that file (anchors as
GitHub makes them: lowercase, punctuation removed, spaces to hyphens, -1, -2 on repeats).

Pictures: `python -m experiments.make_figures` runs into a temporary directory. The board is
plain string formatting, so the committed docs/figures/board.svg must equal the one made, byte
for byte. matplotlib's SVG is byte-stable for one matplotlib version only (its layout and
number formatting change between versions), so the committed learning curve must equal the one
made when the installed matplotlib is the version the file names (its metadata), and otherwise
the script must still make a well-formed SVG with the same titles.

Commands: COMMANDS below maps each command line of the README's code blocks to the test that
runs it (as a user runs it, shortened by arguments) or to why no test can (ELSEWHERE); the README
itself says so on that line. A command added to the README needs its row here.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from tests.ci_budget import left_to_the_full_run

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
RESULTS = REPO / "experiments" / "RESULTS.md"
FIGURES = REPO / "docs" / "figures"
MAX_LINES = 230  # "about 200"; the 30-second play command within the first 40
FIRST_LINES = 40
PLAY_COMMANDS = ("othello-jax play --checkpoint=builtin:8x8-expert", "othello-jax play --checkpoint=builtin:6x6")

# README command -> the test that runs it (file::function; the note says how it differs)
COMMANDS: dict[str, str] = {
    "othello-jax play --checkpoint=builtin:8x8-expert": "tests/test_readme.py::test_play_the_shipped_8x8_network",
    "othello-jax play --checkpoint=builtin:6x6 --color=white":
        "tests/test_pretrained.py::test_play_command_with_the_builtin_network",
    "bash scripts/quickstart.sh":
        "tests/test_entry_points.py::test_quickstart_stopped_resumed_then_export_and_analyze_its_network",
    # the script itself with stand-in tools (the real run of it is CI's own)
    "bash scripts/test.sh": "tests/test_test_script.py::test_the_script_without_python313",
    # the quickstart runs `othello-jax train` on othello6_cpu into runs/othello6_cpu, then `plot`
    "othello-jax train --config=othello6_cpu --workdir=runs/othello6_cpu":
        "tests/test_entry_points.py::test_quickstart_stopped_resumed_then_export_and_analyze_its_network",
    "othello-jax plot runs/othello6_cpu":
        "tests/test_entry_points.py::test_quickstart_stopped_resumed_then_export_and_analyze_its_network",
    # the quickstart's evaluations: `eval --size=6 --black=net:... --white=alphabeta:depth=3`
    'othello-jax eval --size=6 --black="net:ckpt=builtin:6x6,sims=128" --white=alphabeta:depth=3 --games=100':
        "tests/test_entry_points.py::test_quickstart_stopped_resumed_then_export_and_analyze_its_network",
    # the command's main with greedy against `perfect`, in process (a subprocess costs 30 s of solving)
    'othello-jax eval --size=6 --black="net:ckpt=runs/othello6_cpu,sims=128" --white=perfect --games=100 '
    "--random-plies=10": "tests/test_perfect_play.py::test_eval_reports_against_perfect",
    'othello-jax testset --agent="net:ckpt=runs/othello6_cpu,sims=128"':
        "tests/test_entry_points.py::test_make_testset_and_score_on_the_shipped_testset",
    "python -m experiments.eval_ladder --workdir=runs/othello6_cpu --games=64 --sims=32 --out=elo.png":
        "tests/test_entry_points.py::test_train_with_the_readme_flags_then_the_elo_ladder",
    "othello-jax play --checkpoint=runs/othello6_cpu --sims=200 --color=white":
        "tests/test_play.py::test_play_command_against_a_checkpoint_through_piped_stdin",
    # `analyze --checkpoint=FILE --moves=c2` on the quickstart's exported network
    "othello-jax analyze --checkpoint=builtin:6x6 --moves=c2 --sims=400":
        "tests/test_entry_points.py::test_quickstart_stopped_resumed_then_export_and_analyze_its_network",
    # a GUI's GTP conversation with `engine --protocol=gtp` serving builtin:6x6
    "othello-jax engine --protocol=gtp --checkpoint=builtin:8x8-expert":
        "tests/test_entry_points.py::test_engine_serves_a_network_over_gtp",
    # `serve --agent=greedy --host=0.0.0.0 --port=0` as a process: its address line, the page, Ctrl-C
    "othello-jax serve":
        "tests/test_serve_api.py::test_serve_prints_its_address_warns_on_an_open_host_and_stops_on_ctrl_c",
    # the installed command into the user cache, from a local server laid out as the FFO's site
    "othello-jax wthor download":
        "tests/test_wthor_download.py::test_the_command_fills_the_user_cache_where_the_readers_look",
    # the expert start on a small WThor slice, each step shortened by overrides
    "python -m experiments.train_supervised --config=experiments/configs/supervised.py:expert8_cpu "
    "--workdir=runs/expert8":
        "tests/test_supervised.py::test_the_readmes_expert_start_trains_scores_and_starts_8x8_self_play",
    "othello-jax accuracy --checkpoint=runs/expert8":
        "tests/test_supervised.py::test_the_readmes_expert_start_trains_scores_and_starts_8x8_self_play",
    "othello-jax train --config=othello8_cpu --workdir=runs/o8_expert --config.init_network=runs/expert8":
        "tests/test_supervised.py::test_the_readmes_expert_start_trains_scores_and_starts_8x8_self_play",
    "othello-jax accuracy --checkpoint=builtin:8x8-expert --split=random":
        "tests/test_supervised.py::test_the_shipped_expert_network_predicts_expert_moves",
}
# README command -> why no test runs it (the README names the same on the command's line)
ELSEWHERE: dict[str, str] = {
    "othello-jax train --config=othello8_gpu --workdir=runs/o8gpu": "GPU",
    "othello-jax train --config=othello8_tpu --workdir=runs/o8tpu": "TPU",
}
COMMAND_PREFIXES = ("othello-jax ", "bash ", "python -m ")


# ---------------------------------------------------------------------------------------------
# reading markdown
# ---------------------------------------------------------------------------------------------
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading's text: code marks and punctuation removed, lowercase,
    each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every heading's anchor in a markdown text, repeats numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", markdown).splitlines():
        heading = re.match(r"#{1,6} (.+)", line)
        if heading:
            anchor = github_anchor(heading.group(1))
            count = seen.get(anchor, 0)
            seen[anchor] = count + 1
            found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def links(markdown: str) -> list[str]:
    """The targets of the links and images outside code blocks and code spans."""
    prose = re.sub(r"`[^`\n]*`", "", FENCE.sub("", markdown))
    return LINK.findall(prose)


def broken_links(markdown: str, source: Path) -> list[str]:
    """The relative links of ``markdown`` (a file at ``source``) that name no file or no heading."""
    broken = []
    for target in links(markdown):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (source.parent / path).resolve() if path else source
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif anchor and anchor not in anchors(file.read_text()):
            broken.append(f"{target}: no heading of {file.name} has the anchor #{anchor}")
    return broken


def where_things_stand(results: str) -> str:
    """RESULTS.md's opening section, up to the next section."""
    start = results.index("\n## Where things stand\n")
    end = results.index("\n## ", start + 1)
    return results[start:end]


def readme_commands(markdown: str) -> list[tuple[str, str]]:
    """(command, the rest of its line: a comment) for each command line of the code blocks."""
    commands = []
    for block in FENCE.findall(markdown):
        for line in block.splitlines()[1:-1]:
            command, _, comment = line.partition("  #")
            if command.startswith(COMMAND_PREFIXES):
                commands.append((command.strip(), comment))
    return commands


# ---------------------------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------------------------
def test_anchor_rules_match_github():
    assert github_anchor("The quickstart's recipe for two hours, 6x6: the compute curve (2026-11-26)") == \
        "the-quickstarts-recipe-for-two-hours-6x6-the-compute-curve-2026-11-26"
    assert github_anchor("A value head: `network.value_margin=0.5` (a screen)") == \
        "a-value-head-networkvalue_margin05-a-screen"
    assert github_anchor("WDL + pooling") == "wdl--pooling"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n### A\n") == {"a", "a-1", "a-2"}
    assert broken_links("[x](#b) [y](no-such-file.md) [z](https://example.com)", README) == [
        "#b: no heading of README.md has the anchor #b", f"no-such-file.md: no file {REPO / 'no-such-file.md'}"]


def test_readme_links_resolve():
    text = README.read_text()
    assert len(links(text)) >= 10, links(text)  # the pictures, RESULTS entries, notebooks, docs, LICENSE
    assert broken_links(text, README) == []


def test_where_things_stand_opens_results_and_its_links_resolve():
    results = RESULTS.read_text()
    section = where_things_stand(results)
    assert results.index("\n## ") == results.index("\n## Where things stand\n")  # the first section
    targets = links(section)
    assert len(targets) >= 10 and all(t.startswith("#") for t in targets), targets
    assert broken_links(section, RESULTS) == []


def test_results_entries_are_newest_first():
    """The dated entries below "Where things stand" run from the newest date to the oldest."""
    dates = re.findall(r"^## .*\((\d{4}-\d\d-\d\d)[,)]", RESULTS.read_text(), re.M)
    assert len(dates) > 30 and dates == sorted(dates, reverse=True), dates


def test_readme_is_short_and_opens_with_the_play_command():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_LINES, len(lines)
    for command in PLAY_COMMANDS:
        where = [number for number, line in enumerate(lines, start=1) if line.startswith(command)]
        assert where and where[0] <= FIRST_LINES, (command, where)


def test_every_readme_command_is_run_by_a_test_or_said_to_need_more():
    commands = readme_commands(README.read_text())
    assert len(commands) >= 10, commands
    listed = [command for command, _ in commands]
    missing = [c for c in listed if c not in COMMANDS and c not in ELSEWHERE]
    assert missing == [], f"add these README commands to COMMANDS or ELSEWHERE in {__file__}"
    stale = [c for c in (*COMMANDS, *ELSEWHERE) if c not in listed]
    assert stale == [], "these rows name commands the README no longer shows"
    for command, comment in commands:
        if command in ELSEWHERE:  # the README says why on the command's line
            assert ELSEWHERE[command] in comment, (command, comment)
    for command, test in COMMANDS.items():
        file, _, function = test.partition("::")
        module = importlib.import_module(file.removesuffix(".py").replace("/", "."))
        assert callable(getattr(module, function, None)), f"{command}: no test {test}"
        # CI leaves the tests marked slow out: a README command's test must not be one of them
        marks = [getattr(getattr(module, function), "pytestmark", []), getattr(module, "pytestmark", [])]
        names = {mark.name for found in marks for mark in (found if isinstance(found, list) else [found])}
        assert "slow" not in names, f"{command}: {test} is marked slow, so CI never runs it"
        assert not left_to_the_full_run(test), f"{command}: tests/ci_budget.py leaves {test} out of CI"


def test_play_the_shipped_8x8_network():
    """`othello-jax play --checkpoint=builtin:8x8-expert` (the README's first command), shortened to 2
    simulations: the user plays d3 as black, the network answers with a legal move, and the end
    of input ends the game with its record and exit status 0."""
    result = subprocess.run([str(Path(sys.executable).parent / "othello-jax"), "play",
                             "--checkpoint=builtin:8x8-expert", "--sims=2"],
                            input="d3\n", capture_output=True, text=True, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    reply = re.search(r"^white \(network, 2 sims.*\) plays ([a-h][1-8])", result.stdout, re.M)
    assert reply, result.stdout[-3000:]
    from othello_jax.game import Othello, play_transcript

    play_transcript("d3" + reply.group(1), Othello(8))  # raises unless the reply is legal after d3
    assert re.search(rf"^record: d3{reply.group(1)}$", result.stdout, re.M), result.stdout[-3000:]


def test_figures_script_remakes_the_committed_pictures(tmp_path):
    from experiments import make_figures

    assert make_figures.main(["--out", str(tmp_path)]) == 0
    made_board, made_curve = tmp_path / make_figures.BOARD, tmp_path / make_figures.CURVE
    assert made_board.read_bytes() == (FIGURES / make_figures.BOARD).read_bytes()
    committed = (FIGURES / make_figures.CURVE).read_text()
    import matplotlib

    version = re.search(r"Matplotlib v(\S+?),", committed).group(1)
    if version == matplotlib.__version__:
        assert made_curve.read_text() == committed
    else:  # another matplotlib lays the same data out its own way: the picture, its titles
        texts = {"".join(e.itertext()) for e in ElementTree.parse(made_curve).iter("{http://www.w3.org/2000/svg}text")}
        assert {"score in the run's evaluations", "minutes of training", "random", "greedy",
                "alphabeta:depth=3"} <= texts, texts


def test_the_pictures_come_from_a_real_game_and_a_real_run():
    """The board's game file replays legally to the result it records, and the curve's metrics
    hold what the picture draws: every iteration's loss and minutes, and the three evaluations."""
    from experiments import make_figures
    from othello_jax.evaluation.arena import read_saved_games
    from othello_jax.game import BLACK, Othello, play_transcript
    from othello_jax.training.runner.metrics import read_records

    game = Othello(make_figures.BOARD_SIZE)
    saved_games = read_saved_games(make_figures.GAMES)
    assert len(saved_games) >= 1
    for saved in saved_games:
        final, _ = play_transcript(saved.transcript, game)
        assert bool(final.terminal)
        _, movers_diff = game.outcome(final)
        assert int(movers_diff) * (1 if int(final.color) == BLACK else -1) == saved.black_disc_diff, saved
    records = read_records(make_figures.METRICS)
    assert [r["iteration"] for r in records] == list(range(1, len(records) + 1))
    assert all(r["loss"] is not None and r["elapsed_s"] > 0 for r in records)
    evaluated = [r for r in records if "eval/alphabeta:depth=3" in r]
    assert len(evaluated) >= 2 and all({"eval/random", "eval/greedy"} <= set(r) for r in evaluated)


def test_license_is_the_apache_license():
    text = (REPO / "LICENSE").read_text()
    assert text.splitlines()[1].strip() == "Apache License" and "Version 2.0, January 2004" in text
    for section in range(1, 10):
        assert re.search(rf"^   {section}\. [A-Z]", text, re.M), section
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text
    assert "Copyright 2026 The othello-jax authors" in text
    assert 'license = "Apache-2.0"' in (REPO / "pyproject.toml").read_text()
