"""Retired settings (subtree reuse, playout cap randomisation, and the options that never paid:
random opening plies, a fixed opponent, exact labels from the host, averaged duplicates, legal-move
planes, wider heads): naming one is a one-line InputError, from a config dict (an old workdir's), a
config file or a command-line override; off values read, and so do old checkpoints naming the
retired network fields at their off values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from othello_jax import checkpoint
from othello_jax.commands.train import parse
from othello_jax.errors import InputError
from othello_jax.model import RETIRED_NETWORK_FIELDS
from othello_jax.training.settings.defaults import default_config
from othello_jax.training.settings.retired import ANY, RETIRED_SETTINGS, check_retired
from othello_jax.training.settings.run_settings import check_config

REUSE = "search.reuse was removed: subtree reuse gave no gain at equal time (experiments/RESULTS.md, 'subtree reuse')"
DATA = Path(__file__).parent / "data"

# each setting retired for never paying: a value that turns it on, and the RESULTS.md heading its
# reason names (the exact heading text)
NEVER_PAID = {
    "selfplay.random_plies": (6, "Random opening moves in self-play at equal wall clock, 6x6 (2026-11-26)"),
    "selfplay.opponent_share": (0.25, "The 8x8 screen of the league and of exact endings in self-play "
                                      "(12 minutes, one core each, 3 seeds)"),
    "selfplay.opponent": ("alphabeta:depth=2", "The 8x8 screen of the league and of exact endings in self-play "
                                               "(12 minutes, one core each, 3 seeds)"),
    "selfplay.host_exact_empties": (14, "Exact values from the host C solver to 18 empties in 8x8 self-play: "
                                        "screen and full length (2026-11-28, third session)"),
    "selfplay.host_exact_workers": (2, "Exact values from the host C solver to 18 empties in 8x8 self-play: "
                                       "screen and full length (2026-11-28, third session)"),
    "selfplay.host_exact_policy": (True, "Exact policy targets at the quickstart's length, against perfect play, "
                                         "6x6 (2026-11-26)"),
    "replay.average_duplicates": (True, "Options that never paid: retired, and those kept (2026-11-29)"),
    "network.policy_channels": (32, "The heads in self-play: an 8-minute screen, 3 seeds"),
    "network.value_channels": (8, "The heads in self-play: an 8-minute screen, 3 seeds"),
    "network.move_planes": (True, "Strength ceilings on 6x6 with the exact solver as ground truth: capacity, "
                                  "targets, coverage, compute (2026-11-25)"),
}
# meaningless once their switch is gone: any value reads (their switch's setting is the error)
ANY_VALUE = {"selfplay.opponent", "selfplay.host_exact_workers"}


def _one_line(error: pytest.ExceptionInfo) -> str:
    assert "\n" not in str(error.value)
    return str(error.value)


def _with(config: dict, dotted: str, value: object) -> dict:
    """``config`` (a plain dict) with ``dotted`` set to ``value``."""
    *sections, name = dotted.split(".")
    node = config
    for part in sections:
        node = node.setdefault(part, {})
    node[name] = value
    return config


def test_a_config_that_turns_a_retired_setting_on_fails_in_one_line():
    config = default_config()
    config.search.reuse = True
    with pytest.raises(InputError) as error:
        check_config(config)
    assert _one_line(error) == REUSE + "; drop the setting"


def test_an_old_workdirs_config_dict_reads_and_a_turned_on_one_fails():
    old = default_config().to_dict()
    old["search"].update(reuse=False, reuse_nodes=0)  # what every config written before carried
    old["selfplay"]["playout_cap"] = {"every": 0, "fast_simulations": 4}
    check_retired(old)
    old["selfplay"]["playout_cap"]["every"] = 4
    with pytest.raises(InputError, match=r"^selfplay\.playout_cap was removed: playout cap randomisation") as error:
        check_retired(old)
    _one_line(error)


def test_the_table_names_every_retired_setting_and_its_results_heading():
    assert set(RETIRED_SETTINGS) == {"search.reuse", "search.reuse_nodes", "selfplay.playout_cap", *NEVER_PAID}
    assert {name for name, (offs, _) in RETIRED_SETTINGS.items() if offs is ANY} == ANY_VALUE
    assert {f"network.{name}" for name in RETIRED_NETWORK_FIELDS} == {k for k in NEVER_PAID if k.startswith("network.")}
    results = (Path(__file__).parents[1] / "experiments" / "RESULTS.md").read_text()
    for name, (_, heading) in NEVER_PAID.items():
        assert f"(experiments/RESULTS.md, '{heading}')" in RETIRED_SETTINGS[name][1], name
        if "never paid" not in heading:  # that entry comes with the retirement's own RESULTS entry
            assert f"# {heading}\n" in results, heading


@pytest.mark.parametrize("key", sorted(NEVER_PAID))
def test_an_old_config_dict_with_a_retired_setting_off_reads_and_on_fails_in_one_line(key):
    offs = RETIRED_SETTINGS[key][0]
    on, heading = NEVER_PAID[key]
    for off in ([on, "", 0, 1] if offs is ANY else offs):  # an old workdir's config carried its off value
        check_retired(_with(default_config().to_dict(), key, off))
    if offs is ANY:
        return
    with pytest.raises(InputError) as error:
        check_retired(_with(default_config().to_dict(), key, on))
    assert _one_line(error).startswith(f"{key} was removed: ") and heading in str(error.value)
    assert str(error.value).endswith("; drop the setting")


@pytest.mark.parametrize("body, key", [
    ("c.search.reuse = True", "search.reuse"),
    ("c.selfplay.playout_cap.every = 4", "selfplay.playout_cap"),
    *[(f"c.{key} = {on!r}", key) for key, (on, _) in sorted(NEVER_PAID.items()) if key not in ANY_VALUE],
])
def test_a_config_file_setting_a_retired_key_fails_in_one_line(tmp_path, body, key):
    path = tmp_path / "old.py"
    path.write_text("from othello_jax.training.settings.defaults import default_config\n\n\ndef get_config():\n"
                    f"    c = default_config()\n    {body}\n    return c\n")
    with pytest.raises(InputError) as error:
        config, _ = parse([f"--config={path}", f"--workdir={tmp_path / 'run'}"])
        check_config(config)
    assert _one_line(error).startswith(f"{key} was removed: ")


def test_an_override_naming_a_retired_key_fails_before_the_config_is_read(tmp_path):
    with pytest.raises(InputError) as error:
        parse(["--config=experiments/configs/tiny_test.py", f"--workdir={tmp_path}", "--config.search.reuse_nodes=8"])
    assert _one_line(error).startswith("search.reuse_nodes was removed: subtree reuse")


@pytest.mark.parametrize("key", sorted(NEVER_PAID))
def test_an_override_naming_a_setting_that_never_paid_fails_in_one_line(tmp_path, key):
    on, heading = NEVER_PAID[key]
    with pytest.raises(InputError) as error:
        parse(["--config=experiments/configs/tiny_test.py", f"--workdir={tmp_path}", f"--config.{key}={on}"])
    assert _one_line(error).startswith(f"{key} was removed: ") and heading in str(error.value)


def _old_run(workdir: Path, **network) -> Path:
    """tests/data/run_before_layout (tiny_test, 2 iterations) with ``network`` added to the network
    meta of its checkpoints, as workdirs written while the retired fields existed carry them."""
    shutil.copytree(DATA / "run_before_layout", workdir)
    for meta_file in (workdir / "checkpoints").glob("*/meta/metadata"):
        meta = json.loads(meta_file.read_text())
        meta["network"].update(network)
        meta_file.write_text(json.dumps(meta))
    return workdir


def test_an_old_checkpoint_naming_the_retired_network_fields_off_resumes_and_on_fails_in_one_line(tmp_path):
    from experiments.configs import tiny_test
    from othello_jax.training.runner.program import make_train

    program = make_train(tiny_test.get_config())
    template, key = program.start(0)

    def restore(workdir: Path):
        ckpts = checkpoint.Checkpoints(workdir)
        try:
            return ckpts.restore(template, key, program.meta())
        finally:
            ckpts.close()

    # what every workdir and network file written while the fields existed holds
    old = _old_run(tmp_path / "old", move_planes=False, policy_channels=2, value_channels=1)
    state, _, _ = restore(old)
    assert int(state.iteration) == 2
    network, _, size = checkpoint.load_agent_variables(old)
    assert network == program.network and size == 4

    wide = _old_run(tmp_path / "wide", move_planes=False, policy_channels=32, value_channels=1)
    for load in (restore, checkpoint.load_agent_variables):
        with pytest.raises(checkpoint.CheckpointError) as error:
            load(wide)
        assert f"checkpoint {wide}" in _one_line(error)
        assert ("network.policy_channels=32 names a removed option (wider heads' 8-minute gain was gone at the "
                "quickstart's length (experiments/RESULTS.md, 'The heads in self-play: an 8-minute screen, 3 seeds'))"
                in str(error.value))
