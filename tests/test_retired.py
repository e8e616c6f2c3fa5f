"""Retired settings (subtree reuse, playout cap randomisation): naming one is a one-line InputError,
from a config dict (an old workdir's), a config file or a command-line override; off values read."""

from __future__ import annotations

import pytest

from othello_jax.commands.train import parse
from othello_jax.errors import InputError
from othello_jax.training.settings.defaults import default_config
from othello_jax.training.settings.retired import RETIRED_SETTINGS, check_retired
from othello_jax.training.settings.run_settings import check_config

REUSE = "search.reuse was removed: subtree reuse gave no gain at equal time (experiments/RESULTS.md, 'subtree reuse')"


def _one_line(error: pytest.ExceptionInfo) -> str:
    assert "\n" not in str(error.value)
    return str(error.value)


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
    assert set(RETIRED_SETTINGS) == {"search.reuse", "search.reuse_nodes", "selfplay.playout_cap"}


@pytest.mark.parametrize("body, key", [
    ("c.search.reuse = True", "search.reuse"),
    ("c.selfplay.playout_cap.every = 4", "selfplay.playout_cap"),
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
