"""Arena matches the training loop runs: periodic evaluation against baselines, and gating.

Both use :mod:`othello_jax.evaluation.arena` (each opening played twice with colours swapped) and play the
network with search but without exploration noise (``agents.neural_agent``). A match compiled for the
first time says so first (most of a minute on a small CPU for a few seconds of play), on the first
process only. A stop signal abandons an evaluation between its matches (:func:`othello_jax.stops.check`):
the compile or match in flight cannot be cut short, the rest is not started.
"""

from __future__ import annotations

import jax

from othello_jax import agents, stops
from othello_jax.evaluation import arena
from othello_jax.evaluation.perfect_set import score_agent
from othello_jax.notices import Say
from othello_jax.solver.solved_moves import load as load_testset
from othello_jax.training.runner.program import TrainProgram
from othello_jax.training.settings.run_settings import RunSettings


def _say() -> Say | None:
    """Where the matches' compile notices go: the first process's standard output, beside the
    loop's lines ("evaluation: compiling the match ..."); None on the other processes."""
    if jax.process_index() != 0:
        return None
    return lambda line: print(f"evaluation: {line}", flush=True)


def opponent_specs(text: str) -> list[str]:
    """``config.eval.opponents``: agent specs separated by spaces, e.g. ``"random greedy alphabeta:depth=3"``."""
    return text.split()


def network_player(config: RunSettings, program: TrainProgram, variables: dict, sims: int, name: str) -> agents.Agent:
    """The network with ``sims`` simulations of the run's search variant (0: raw policy).

    Built with :func:`agents.network_agent`, so every evaluation of a run reuses the compiled
    matches of the first one (the variables are an argument, not a constant).
    """
    host = jax.device_get(variables)  # plain arrays: the arena runs on one device
    return agents.network_agent(program.game, program.network, host, sims=sims,
                                search=config.search.variant, name=name)


def evaluate_against_baselines(config: RunSettings, program: TrainProgram, variables: dict, key: jax.Array) -> dict:
    """``{"eval/<spec>": score}`` of the network against each opponent in ``config.eval.opponents``.

    Score = (wins + draws / 2) / games over ``config.eval.games`` games per opponent.
    """
    sims = config.eval_simulations
    player = network_player(config, program, variables, sims, name=f"net:sims={sims}")
    open_key, play_key = jax.random.split(key)
    lines = arena.match_openings(program.game, config.eval.games, open_key)
    scores = {}
    for i, spec in enumerate(opponent_specs(config.eval.opponents)):
        stops.check("the evaluation")
        opponent = agents.parse_agent(spec, program.game)
        result = arena.play_match(program.game, player, opponent, lines, jax.random.fold_in(play_key, i),
                                  say=_say())
        scores[f"eval/{spec}"] = result.summary().score
    if config.eval.testset:
        stops.check("the evaluation")
        scores.update(testset_score(player, jax.random.fold_in(key, 99)))
    return scores


def testset_score(player: agents.Agent, key: jax.Array) -> dict:
    """``{"testset/optimal": share, "testset/disc_loss": per move}`` of a 6x6 player on the
    packaged perfect-play test set (its own moves only, nothing solved)."""
    report = score_agent(player.act, load_testset(), key)
    return {"testset/optimal": float(report.total.optimal), "testset/disc_loss": float(report.total.disc_loss)}


def gate_against_champion(config: RunSettings, program: TrainProgram, challenger: dict, champion: dict,
                          key: jax.Array) -> float:
    """The latest network's score against the current self-play network (AlphaGo Zero gating)."""
    stops.check("the gating match")
    sims = config.gate_simulations
    first = network_player(config, program, challenger, sims, name="challenger")
    second = network_player(config, program, champion, sims, name="champion")
    _, score = arena.gate(first, second, config.gating.games, config.gating.threshold, key,
                          game=program.game, say=_say())
    return float(score)
