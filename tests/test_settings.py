"""Typed run settings: resolved once from the config, defaults only from ``default_config()``,
one one-line error per impossible setting, a record per schedule stage."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest

from experiments.configs import supervised as supervised_configs
from othello_jax.errors import InputError
from othello_jax.training.settings.defaults import default_config
from othello_jax.training.settings.run_settings import (
    LossSettings,
    OptimizerSettings,
    RunSettings,
    check_config,
    resolve,
    resolve_stages,
)
from othello_jax.training.supervised import trainer as supervised

REPO = Path(__file__).resolve().parents[1]
SECTIONS = ("distributed", "replay", "train", "loss", "optimizer", "eval", "gating", "checkpoint")


def test_every_field_comes_from_default_config():
    """A record holds the config's values, nothing else: no second default anywhere."""
    config = default_config()
    settings = resolve(config)
    for section in SECTIONS:
        record = getattr(settings, section)
        for field in dataclasses.fields(record):
            value = getattr(record, field.name)
            expected = config[section][field.name]
            if section == "optimizer" and field.name == "total_steps":
                continue  # resolved below
            assert value == (tuple(expected) if isinstance(value, tuple) else expected), (section, field.name)
    for name in ("seed", "board_size", "iterations", "max_minutes", "schedule_clock", "num_devices"):
        assert getattr(settings, name) == config[name]
    # the defaults the supervised schema's shared functions once repeated (and disagreed with)
    assert settings.optimizer.schedule == "steps"
    assert settings.loss.score_weight == settings.loss.ownership_weight == 0.5
    assert settings.search.num_simulations == config.search.num_simulations
    assert settings.selfplay.num_games == config.selfplay.num_games


def test_total_steps_zero_spans_the_run():
    config = default_config()
    config.iterations, config.train.steps_per_iteration, config.optimizer.total_steps = 7, 3, 0
    assert resolve(config).optimizer.total_steps == 21
    config.optimizer.total_steps = 5
    assert resolve(config).optimizer.total_steps == 5


def test_records_are_frozen_and_typed():
    settings = resolve(default_config())
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.train.batch_size = 1
    assert isinstance(settings.loss.l2, float) and isinstance(settings.optimizer.boundaries, tuple)
    assert isinstance(settings, RunSettings)


def test_a_missing_setting_is_a_one_line_error():
    config = default_config()
    del config.loss["score_weight"]
    with pytest.raises(InputError, match=r"^config has no setting loss.score_weight \(start from default_config"):
        resolve(config)


IMPOSSIBLE = [
    ("board_size", 7, "board_size must be one of"),
    ("iterations", 0, "iterations must be >= 1, got 0"),
    ("max_minutes", -1.0, "max_minutes must be >= 0"),
    ("schedule_clock", "hours", "schedule_clock must be one of iterations, minutes, got 'hours'"),
    ("train.batch_size", 0, "train.batch_size must be >= 1, got 0"),
    ("train.steps_per_iteration", 0, "train.steps_per_iteration must be >= 1"),
    ("train.unroll", "maybe", "train.unroll must be auto, yes or no, got 'maybe'"),
    ("replay.capacity", 0, "replay.capacity must be >= 1"),
    ("replay.window_start", 0, "replay.window_start must be >= 1"),
    ("replay.window_max", 1, "replay.window_max must be >= replay.window_start"),
    ("checkpoint.every", 0, "checkpoint.every must be >= 1"),
    ("checkpoint.every_minutes", -1.0, "checkpoint.every_minutes must be >= 0"),
    ("checkpoint.keep", 0, "checkpoint.keep must be >= 1"),
    ("distributed.num_processes", -1, "distributed.num_processes must be >= 0"),
    ("distributed.process_id", -2, "distributed.process_id must be >= 0"),
    ("eval.every", -1, "eval.every must be >= 0"),
    ("eval.games", 3, "eval.games must be even and >= 2"),
    ("gating.threshold", 0.0, r"gating.threshold must be in \(0, 1\]"),
    ("loss.score_weight", -1.0, "loss.score_weight must be >= 0, got -1.0"),
    ("loss.ownership_weight", -0.5, "loss.ownership_weight must be >= 0, got -0.5"),
    ("optimizer.name", "lion", "unknown optimizer 'lion'; choose sgd or adamw"),
    ("optimizer.schedule", "linear", "unknown learning-rate schedule 'linear'; choose constant, steps or cosine"),
    ("network.preset", "huge", "unknown network preset 'huge'"),
    ("network.value_head", "pdf", "unknown network.value_head 'pdf'"),
    ("search.num_simulations", 0, "num_simulations must be >= 1"),
    ("selfplay.num_games", 0, "selfplay.num_games must be >= 1"),
]


@pytest.mark.parametrize("key, value, message", IMPOSSIBLE, ids=[k for k, _, _ in IMPOSSIBLE])
def test_each_impossible_setting_is_one_line(key, value, message):
    config = default_config()
    *parents, leaf = key.split(".")
    node = config
    for name in parents:
        node = node[name]
    node[leaf] = value
    with pytest.raises(InputError, match=message) as caught:
        resolve(config)
    assert "\n" not in str(caught.value)


def test_settings_that_depend_on_each_other():
    config = default_config()
    config.schedule_clock = "minutes"
    with pytest.raises(InputError, match="schedule_clock='minutes' needs max_minutes > 0"):
        resolve(config)
    config = default_config()
    config.gating.update(enabled=True, every=0)
    with pytest.raises(InputError, match="gating.every must be >= 1"):
        resolve(config)
    config.gating.update(every=1, games=3)
    with pytest.raises(InputError, match="gating.games must be even and >= 2"):
        resolve(config)
    config = default_config()
    config.eval.update(every=1, opponents="random nobody")
    with pytest.raises(InputError, match="nobody"):
        resolve(config)
    config.eval.update(opponents="random", testset=True)
    with pytest.raises(InputError, match="eval.testset needs board_size 6"):
        resolve(config)


def test_each_stage_is_a_record_with_the_config_names():
    config = default_config()
    config.stages = "3: search.num_simulations=8, eval.every=2, checkpoint.every=1; 6: optimizer.learning_rate=0.05"
    stages, per_stage = resolve_stages(config)
    assert [start for start, _ in stages] == [0, 3, 6]
    base, middle, late = per_stage
    assert base.search.num_simulations == 32 and middle.search.num_simulations == 8 == late.search.num_simulations
    assert (base.eval.every, middle.eval.every, middle.checkpoint.every) == (0, 2, 1)
    assert middle.optimizer.learning_rate == 0.1 and late.optimizer.learning_rate == 0.05
    assert middle.selfplay.num_games == base.selfplay.num_games
    assert config.search.num_simulations == 32  # the config itself is untouched
    config.stages = "4: train.batch_size=0"
    with pytest.raises(InputError, match=r"train.batch_size must be >= 1, got 0 \(in the stage from iteration 4\)"):
        check_config(config)


def test_supervised_learning_has_its_own_records():
    """The supervised schema resolves to its own record; the shared loss and optimizer records are
    filled from its fields, not from defaults that differ from default_config()'s."""
    config = supervised_configs.get_config("test")
    settings = supervised.resolve(config)
    assert isinstance(settings.loss, LossSettings) and isinstance(settings.optimizer, OptimizerSettings)
    assert settings.loss.score_weight == settings.loss.ownership_weight == 0.0
    assert settings.optimizer.schedule == "cosine" and settings.optimizer.total_steps == config.total_steps
    assert settings.unroll is True and settings.steps_per_call == 2
    config.steps_per_call = 0
    with pytest.raises(InputError, match="steps_per_call must be >= 1, got 0"):
        supervised.resolve(config)
    config = supervised_configs.get_config("test")
    config.optimizer.name = "lion"
    with pytest.raises(InputError, match="unknown optimizer 'lion'"):
        supervised.resolve(config)


TRAINING_CONFIGS = sorted(path.stem for path in (REPO / "experiments" / "configs").glob("*.py")
                          if path.stem not in ("__init__", "supervised"))


@pytest.mark.parametrize("name", TRAINING_CONFIGS)
def test_every_shipped_training_config_passes_its_checks(name):
    """What `othello-jax train --config=experiments/configs/NAME.py` checks before it compiles:
    a shipped config that fails would cost its user a one-line error at the start of every run."""
    config = importlib.import_module(f"experiments.configs.{name}").get_config()
    check_config(config)
    _, settings = resolve_stages(config)
    assert settings[0].board_size == config.board_size and settings[0].iterations == config.iterations


def test_both_programs_network_sections_reach_every_network_field_they_offer():
    """Training and supervised learning build their ``network`` section with one function: unset,
    it gives the preset's shape; every ``NetworkConfig`` field either program offers, set in the
    section, reaches the resolved network and changes nothing else (a field added to
    ``NetworkConfig`` is offered by both unless a program leaves it out, and then it is not in that
    program's section)."""
    from ml_collections import ConfigDict

    from othello_jax.model import NetworkConfig
    from othello_jax.training.settings.defaults import SELFPLAY_WITHOUT, network_section
    from othello_jax.training.settings.run_settings import network_config
    from othello_jax.training.settings.supervised_settings import SUPERVISED_WITHOUT

    changed = dict(blocks=3, channels=24, value_hidden=16, dtype="bfloat16",
                   value_head="wdl", score_head=True, ownership_head=True, global_pool=True, value_margin=0.25,
                   tower="conv")
    assert set(changed) == {f.name for f in dataclasses.fields(NetworkConfig)}, "a new field: add it here"
    programs = {"training": (default_config(), SELFPLAY_WITHOUT),
                "supervised": (supervised_configs.get_config(), SUPERVISED_WITHOUT)}
    small = NetworkConfig.preset("small")
    for program, (config, without) in programs.items():
        assert network_config(config) == NetworkConfig.preset(config.network.preset), program
        assert not set(without) & set(config.network), program
        for name, value in changed.items():
            if name in without:
                continue
            got = network_config(ConfigDict(dict(network=network_section("small", without=without, **{name: value}))))
            assert got == dataclasses.replace(small, **{name: value}), (program, name)
    with pytest.raises(InputError, match="unknown network field"):
        network_section("small", heads=3)


def test_the_settings_reference_describes_every_setting_once_and_is_up_to_date():
    """docs/settings.md is the reference: every setting of both trainers has one description beside its
    default, and the page is the module's output."""
    from othello_jax.training.settings import reference

    for title, _, make, described in reference.PROGRAMS:
        assert reference.unmatched(make(), described) == [], title
    page = (Path(__file__).resolve().parents[1] / "docs" / "settings.md").read_text()
    assert page == reference.render(), \
        "docs/settings.md is stale: python -m othello_jax.training.settings.reference > docs/settings.md"


def test_no_retired_setting_is_in_either_default():
    from othello_jax.training.settings.retired import RETIRED_SETTINGS
    from othello_jax.training.settings.supervised_settings import default_supervised_config

    for config in (default_config().to_dict(), default_supervised_config().to_dict()):
        for name in RETIRED_SETTINGS:
            node = config
            for part in name.split("."):
                node = node.get(part, {}) if isinstance(node, dict) else {}
            assert node == {}, name


def test_every_value_target_name_has_its_formula():
    import jax.numpy as jnp

    from othello_jax.training.compiled.selfplay import value_targets
    from othello_jax.training.settings.selfplay_settings import VALUE_TARGETS

    search_value, outcome, mask = jnp.full((3, 2), 0.5), jnp.ones((3, 2)), jnp.ones((3, 2), bool)
    for kind in VALUE_TARGETS:
        assert value_targets(kind, search_value, outcome, mask, 0.9).shape == (3, 2), kind
    with pytest.raises(KeyError):
        value_targets("margin", search_value, outcome, mask, 0.9)


def test_a_misspelt_setting_in_a_config_file_is_a_one_line_error_in_both_trainers():
    from experiments.configs.supervised import get_config
    from othello_jax.training.settings.supervised_settings import resolve as resolve_supervised

    config = default_config()
    config.selfplay.tempreature = 2.0  # a config file can add keys: ConfigDicts are unlocked
    with pytest.raises(InputError, match=r"^unknown setting selfplay\.tempreature \(every setting is in docs/"):
        check_config(config)
    supervised_config = get_config("test")
    supervised_config.optimizer.learnin_rate = 0.1
    with pytest.raises(InputError, match=r"^unknown setting optimizer\.learnin_rate"):
        resolve_supervised(supervised_config)
