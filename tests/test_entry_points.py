"""Every `othello-jax` subcommand and every `python -m experiments.*` command that the README,
docs/multihost.md and the notebooks show, run once as a user runs it: a subprocess from the
repository root with the defaults a user gets (one host device per core: the test session's
JAX_NUM_CPU_DEVICES=1 is removed; the shipped configs and networks), shortened by arguments
only (`--config.iterations`, `--games`, `--sims`, `--out` to a temporary path; the fake GTP
engine, tests/fake_gtp_engine.py, in place of Edax). Each must exit 0 and print or write what a
user looks for. The children keep the session's XLA compilation cache and its
JAX_DISABLE_MOST_OPTIMIZATIONS, so they compile once and fast.

Where the user's command already runs as a subprocess elsewhere, it is not repeated here:

- `othello-jax play --checkpoint=builtin:6x6 --color=white`:
  tests/test_pretrained.py::test_play_command_with_the_builtin_network (a whole game, piped moves),
  and `play --checkpoint=DIR` in tests/test_play.py::test_play_command_against_a_checkpoint_through_piped_stdin;
- `python -m experiments.chaos_resume --kills=3`: tests/test_chaos_resume.py.

Left out, and why:

- `python -m experiments.bench_selfplay`: its `main` runs with these small arguments in
  tests/test_bench_selfplay.py (in process; 30 s more as a subprocess, and `experiments.bench_env`
  and `bench_solver` below run the same `python -m` launch of a benchmark module);
- `othello-jax eval --white=perfect` (README): tests/test_perfect_play.py runs the command's `main`
  against `perfect`; a subprocess of it costs 30 s of solving;
- `othello-jax train` on othello8_gpu / othello8_tpu / othello8_cpu / othello8_small:
  accelerator-sized (or hours-long) 8x8 configs, minutes per iteration on a CPU; `othello-jax train`
  runs here with the README's flags on the shipped tiny_test config (the quickstart runs it on
  othello6_cpu);
- Edax itself (`gtp:cmd="edax -gtp -l 4"`): not installable here; the fake engine speaks the same GTP;
- multi-host and TPU launches (docs/multihost.md): need several machines or a TPU; two processes
  on one machine are tests/test_multiprocess.py;
- `othello-jax make-testset` at its full size (500 positions, minutes of solving) and every
  benchmark at its full size: only their shortened runs are here;
- `scripts/quickstart.sh`'s pip install (SKIP_INSTALL=1): the test session's ./.venv is that
  installation, and scripts/test.sh runs the same install;
- extending a run and resuming it on the iterations clock: tests/test_resume.py (stopped, resumed
  and extended on the users' two-core layout, equal to the run never stopped) and
  tests/test_preemption.py (the quickstart's own stop and resume on its minutes clock is here);
- marked slow (minutes each on 2 cores; `bash scripts/test.sh -m ""` runs them):
  `python -m experiments.bench_cores` (compiles the quickstart config twice, one and two devices; its
  supervised workload too); the pretraining chain (make-labels, `train_supervised` on `:labels6`,
  the quickstart from that network), each step of which CI runs on its own: `make-labels` in
  tests/test_labels.py (the command's main), `train_supervised` on labels as users run it in
  tests/test_label_training.py, `--config.init_network` in tests/test_init_network.py.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_resume import records

REPO = Path(__file__).resolve().parents[1]
OTHELLO_JAX = str(Path(sys.executable).parent / "othello-jax")  # the console script users run
PYTHON = sys.executable


def user_env(**extra: str) -> dict[str, str]:
    """The session's environment without the one-device pin: the CLI picks one device per core."""
    env = {name: value for name, value in os.environ.items() if name != "JAX_NUM_CPU_DEVICES"}
    env.update(extra)
    return env


def run(args: list[str], input: str | None = None, timeout: float = 600, **env: str) -> str:
    """Run ``args`` from the repository root; assert exit 0; stdout and stderr together."""
    result = subprocess.run([str(a) for a in args], cwd=REPO, env=user_env(**env), input=input, capture_output=True,
                            text=True, timeout=timeout)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{shlex.join(map(str, args))} exited {result.returncode}:\n{output[-4000:]}"
    return output


def expected_devices(config_name: str) -> str:
    """The host devices `othello-jax train` picks for a new run of a shipped config on this machine
    (one per core that divides the games and the batch), as a regular expression."""
    from experiments.configs import othello6_cpu, tiny_test
    from othello_jax.commands.train import host_devices

    config = {"othello6_cpu": othello6_cpu, "tiny_test": tiny_test}[config_name].get_config()
    devices = host_devices(config, REPO / "no-such-workdir", len(os.sched_getaffinity(0)), environ=user_env())
    return str(devices) if devices else r"\d+"  # None: the caller's XLA_FLAGS fix the count


def test_quickstart_stopped_resumed_then_export_and_analyze_its_network(tmp_path):
    """`bash scripts/quickstart.sh` as a user runs it, stopped by Ctrl-C while it trains (exit 75,
    a checkpoint), then the same command again: the run resumes on the users' default devices and
    the quickstart's minutes clock, trains until its budget (every iteration logged once, the
    schedule never moving back), then `plot` and `eval` against the three baselines; then
    `export-network` of the run and `analyze` with the file. TRAIN_ARGS (overrides only) makes the
    iterations small, the budget 90 s (the first compile counts against it and takes 35 s on
    a loaded CI machine, so Ctrl-C comes after the first iteration) and skips the run's own
    evaluation (tests/test_train.py checks it in the loop), to keep CI inside its budget."""
    assert Path(REPO / ".venv" / "bin" / "othello-jax").exists(), "scripts/quickstart.sh runs ./.venv/bin/othello-jax"
    workdir = tmp_path / "othello6_cpu"
    budget_minutes = 1.5
    small = ("--config.selfplay.num_games=16 --config.train.batch_size=64 --config.train.steps_per_iteration=2 "
             f"--config.eval.every=0 --config.max_minutes={budget_minutes}")
    env = user_env(SKIP_INSTALL="1", GAMES="2", SIMS="2", WORKDIR=str(workdir), TRAIN_ARGS=small)
    script = subprocess.Popen(["bash", "scripts/quickstart.sh"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = []
    for line in script.stdout:  # Ctrl-C (SIGINT to the terminal's process group) once an iteration is done
        lines.append(line)
        if re.match(r"\[\s*1/240\]", line):
            os.killpg(script.pid, signal.SIGINT)
    out = "".join(lines)
    assert script.wait(timeout=600) == 75, out[-3000:]
    assert re.search(rf"^training {re.escape(str(workdir))}: 6x6, {expected_devices('othello6_cpu')} device\(s\)",
                     out, re.M), out[-3000:]
    stopped = int(re.search(r"stopped by SIGINT after iteration (\d+) of 240", out).group(1))
    assert "training stopped before the end (checkpoint saved); run" in out and not (workdir / "curves.png").exists()
    before = records(workdir)

    out = run(["bash", "scripts/quickstart.sh"], timeout=1500, **{k: env[k] for k in ("SKIP_INSTALL", "GAMES", "SIMS",
                                                                                     "WORKDIR", "TRAIN_ARGS")})
    assert f"resumed {workdir} at iteration {stopped}" in out, out[-3000:]
    assert f"max_minutes={budget_minutes} reached" in out, out[-3000:]
    logged = records(workdir)
    assert logged[:stopped] == before  # the first session's records kept as they were
    assert [r["iteration"] for r in logged] == list(range(1, len(logged) + 1)) and stopped < len(logged) < 240
    positions = [r["schedule_position"] for r in logged]
    assert positions == sorted(positions) and positions[-1] > 0.9, positions  # the budget ended it, near 1
    assert (workdir / "curves.png").stat().st_size > 0 and f"wrote {workdir / 'curves.png'}" in out
    assert re.findall(r"^net:ckpt=\S+,sims=2  vs  (\S+)$", out, re.M) == ["random", "greedy", "alphabeta:depth=3"]
    assert len(re.findall(r"^  score      [01]\.\d{3} ", out, re.M)) == 3, out[-3000:]

    network = tmp_path / "my6x6.msgpack"
    out = run([OTHELLO_JAX, "export-network", f"--checkpoint={workdir}", f"--out={network}"])
    assert network.stat().st_size > 0 and out.startswith(f"wrote {network} (") and ": 6x6, " in out
    out = run([OTHELLO_JAX, "analyze", f"--checkpoint={network}", "--moves=c2", "--sims=8"])
    assert "search value" in out and "after 8 simulations" in out, out
    assert re.search(r"^ move  visits   prior       q\n +[a-f][1-6] +\d+ ", out, re.M), out


def test_train_with_the_readme_flags_then_the_elo_ladder(tmp_path):
    """`othello-jax train ... --config.search.variant=puct --config.search.num_simulations=N`
    on the shipped tiny_test config, then `python -m experiments.eval_ladder` over its checkpoints
    (shortened: 2 games a pairing, the raw policies)."""
    workdir = tmp_path / "tiny"
    out = run([OTHELLO_JAX, "train", "--config=experiments/configs/tiny_test.py", f"--workdir={workdir}",
               "--config.search.variant=puct", "--config.search.num_simulations=8", "--config.iterations=2"])
    assert re.search(rf"^training {re.escape(str(workdir))}: 4x4, {expected_devices('tiny_test')} device\(s\)",
                     out, re.M), out[-3000:]
    assert re.search(r"^\[2/2\] \| loss ", out, re.M), out[-3000:]
    elo = tmp_path / "elo.png"
    # the networks' raw policies (the ladder's default --sims=0): a searching match compiles for a
    # minute of CI a pairing, and the arena's tests play searching networks
    out = run([PYTHON, "-m", "experiments.eval_ladder", f"--workdir={workdir}", "--games=2",
               "--baselines=random,greedy", f"--out={elo}"])
    assert re.search(r"^iteration 2 +-?\d+ +\[", out, re.M) and re.search(r"^random +0 ", out, re.M), out
    assert elo.stat().st_size > 0 and f"Elo curve written to {elo}" in out


def test_engine_serves_a_network_over_gtp():
    """`othello-jax engine --protocol=gtp --checkpoint=... --sims=N` answering a GUI's conversation."""
    conversation = ["1 name", "2 boardsize 6", "3 clear_board", "4 genmove b", "5 genmove w", "6 showboard",
                    "7 final_score", "8 quit"]
    out = subprocess.run([OTHELLO_JAX, "engine", "--protocol=gtp", "--checkpoint=builtin:6x6", "--sims=4"],
                         input="\n".join(conversation) + "\n", capture_output=True, text=True, cwd=REPO,
                         env=user_env(), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    responses = out.stdout.split("\n\n")[:-1]
    assert len(responses) == len(conversation), out.stdout
    assert responses[:3] == ["=1 othello-jax", "=2", "=3"]
    assert re.fullmatch(r"=4 [a-f][1-6]", responses[3]) and re.fullmatch(r"=5 [a-f][1-6]", responses[4]), responses
    assert responses[5].startswith("=6") and responses[6].startswith("=7 ") and responses[7] == "=8"


def test_eval_against_a_gtp_engine_from_openings(tmp_path, shared_data):
    """The README's Edax match, with the fake engine: `othello-jax eval --black="net:ckpt=...,sims=N"
    --white='gtp:cmd="ENGINE",timeout=120' --games=N --openings=XOT --batch=10 --save-games=FILE`
    (shortened: the network's raw policy, as an 8x8 search's compile cost two of CI's minutes here;
    tests/test_gtp_agent.py plays searching networks against the fake engine in process)."""
    games = tmp_path / "games.txt"
    engine = f"{PYTHON} tests/fake_gtp_engine.py"
    out = run([OTHELLO_JAX, "eval", "--black=net:ckpt=builtin:8x8,sims=0", f'--white=gtp:cmd="{engine}",timeout=120',
               "--games=2", f"--openings={shared_data / 'xot' / 'openingslarge.txt'}", "--batch=10",
               f"--save-games={games}"])
    assert re.search(r"^  W/D/L      \d / \d / \d(  \(wipeouts: \d won, \d lost\))?$", out, re.M)
    assert re.search(r"^  score      [01]\.\d{3} ", out, re.M)
    lines = [line for line in games.read_text().splitlines() if not line.startswith("#")]
    assert len(lines) == 2 and all(line.count("\t") == 3 for line in lines), lines


def test_endgame_accuracy_of_a_network(shared_data):
    """`othello-jax endgame-accuracy --agent=net:ckpt=... --opponent random --openings XOT` (shortened:
    the network's raw policy, as an 8x8 search's compile costs two of CI's minutes; the search
    through --checkpoint is the same player `play` and `analyze` test)."""
    out = run([OTHELLO_JAX, "endgame-accuracy", "--agent=net:ckpt=builtin:8x8,sims=0", "--opponent", "random",
               "--openings", shared_data / "xot" / "openingslarge.txt", "--games", "2", "--empties", "8"])
    assert re.search(r"^\d+ positions judged; kept the game-theoretic result in \d+\.\d%", out, re.M), out


def test_make_testset_and_score_on_the_shipped_testset(tmp_path):
    """`othello-jax make-testset --count=N --out=FILE` (a few positions), and `othello-jax testset
    --agent="net:ckpt=...,sims=N"` on the packaged 500-position set."""
    testset = tmp_path / "t.npz"
    out = run([OTHELLO_JAX, "make-testset", "--count=4", f"--out={testset}", "--low=8", "--high=10"])
    assert testset.stat().st_size > 0 and f"4 positions (8-10 empties) written to {testset}" in out, out
    out = run([OTHELLO_JAX, "testset", "--agent=net:ckpt=builtin:6x6,sims=2"])
    assert re.search(r"on 500 test positions \(6x6\)", out) and re.search(r"^     all    500 ", out, re.M), out


@pytest.mark.slow  # 70 s of CI: the README's expert start runs the same two commands as users run them in
# CI (tests/test_supervised.py::test_the_readmes_expert_start_trains_scores_and_starts_8x8_self_play)
def test_supervised_training_then_accuracy(tmp_path, shared_data):
    """`python -m experiments.train_supervised --config=experiments/configs/supervised.py:cpu` on three
    WThor years for 4 steps, then `othello-jax accuracy --checkpoint=WORKDIR` on the held-out year."""
    wthor = tmp_path / "wthor"
    wthor.mkdir()
    for name in ("WTH_1980.wtb", "WTH_1981.wtb", "WTH_2020.wtb", "WTHOR.JOU", "WTHOR.TRN"):
        shutil.copy(shared_data / "wthor" / name, wthor / name)
    workdir, cache = tmp_path / "supervised", tmp_path / "cache"
    out = run([PYTHON, "-m", "experiments.train_supervised", "--config=experiments/configs/supervised.py:cpu",
               f"--workdir={workdir}", f"--config.data.wthor_dir={wthor}", f"--config.data.cache_dir={cache}",
               "--config.data.test_from_year=2020", "--config.total_steps=4", "--config.optimizer.total_steps=4",
               "--config.optimizer.warmup_steps=0", "--config.log_every=2", "--config.eval_every=0"])
    assert re.search(r"^step +4 +loss ", out, re.M) and (workdir / "best").is_dir(), out[-3000:]
    out = run([OTHELLO_JAX, "accuracy", f"--checkpoint={workdir}", f"--wthor={wthor}", f"--cache-dir={cache}",
               "--test-from-year=2020"])
    assert re.search(r"^all +\d+ +\d+\.\d% +\d+\.\d%$", out, re.M), out


@pytest.mark.slow  # 112 s of CI; each step runs elsewhere in CI (see the module's docstring)
def test_pretraining_on_exact_labels_then_the_quickstart_from_that_network(tmp_path):
    """The README's pretraining commands: `othello-jax make-labels`, `python -m
    experiments.train_supervised` with `:labels6` on that file, then `othello-jax train` of the
    quickstart config with `--config.init_network=` the supervised run, shortened by overrides
    (a few labels and steps, one small iteration) on the users' default devices."""
    labels, pretrained, workdir = tmp_path / "offdist.npz", tmp_path / "sl", tmp_path / "othello6_sl"
    out = run([OTHELLO_JAX, "make-labels", "--source=offdist", "--per-band=8-12:40,13-15:20", f"--out={labels}",
               "--cache="])
    assert re.search(r"^60 positions from \d+ games .* written to ", out, re.M), out
    out = run([PYTHON, "-m", "experiments.train_supervised", "--config=experiments/configs/supervised.py:labels6",
               f"--config.data.labels={labels}", "--config.max_minutes=5", "--config.total_steps=4",
               "--config.log_every=2", "--config.eval_every=0", f"--workdir={pretrained}"])
    assert re.search(r"^step +4 +loss ", out, re.M), out[-3000:]
    out = run([OTHELLO_JAX, "train", "--config=experiments/configs/othello6_cpu.py", f"--workdir={workdir}",
               f"--config.init_network={pretrained}", "--config.max_minutes=21", "--config.iterations=1",
               "--config.selfplay.num_games=16", "--config.train.batch_size=64",
               "--config.train.steps_per_iteration=2", "--config.eval.every=0"])
    assert f"starting from the network in {pretrained} (init_network)" in out, out[-3000:]
    assert re.search(r"^\[1/1\]", out, re.M) and [r["iteration"] for r in records(workdir)] == [1], out[-3000:]


@pytest.mark.slow  # 80-110 s of CI: each of its steps runs in CI on its own (make-labels in tests/test_labels.py,
# train_supervised on labels in tests/test_label_training.py, the script's bad input in tests/test_ab_screen.py)
def test_exact_labels_then_learning_in_one_budget(tmp_path):
    """The README's `python -m experiments.label_then_learn --minutes=26 --seed=0 --workdir=...`,
    shortened by arguments (a few labels, 4 gradient steps) on the users' default devices: the
    labels' measured minutes come off the budget and a playable network lands in the workdir."""
    workdir = tmp_path / "sup6"
    out = run([PYTHON, "-m", "experiments.label_then_learn", "--minutes=26", "--seed=0", f"--workdir={workdir}",
               "--per-band=8-12:200,13-15:40", "--config.total_steps=4", "--config.log_every=2",
               "--config.eval_every=0"])
    assert re.search(r"^labels: \d+\.\d\d minutes; learning for the 2\d\.\d\d left$", out, re.M), out[-3000:]
    assert re.search(r"^step +4 +loss ", out, re.M), out[-3000:]
    out = run([OTHELLO_JAX, "eval", "--size=6", f"--black=net:ckpt={workdir},sims=2", "--white=greedy", "--games=2"])
    assert re.search(r"^  games +2 ", out, re.M), out[-3000:]


# CI runs one `python -m` launch of a benchmark module (40-45 s each here, most of it starting jax and
# compiling); bench_env and bench_arena, which no user-facing page names, only with -m ""
@pytest.mark.parametrize("command, expect", [
    pytest.param([PYTHON, "-m", "experiments.bench_env", "--batch", "64", "--plies", "8", "--repeats", "1"],
                 r"^ +64 +random +[\d,]+ +[\d,]+ +\d+\.\dx", marks=pytest.mark.slow),
    ([PYTHON, "-m", "experiments.bench_solver", "--ffo", "40", "--empties", "6", "--batch", "16"], r"scores agree"),
    pytest.param([PYTHON, "-m", "experiments.bench_arena", "--games", "8", "--repeats", "1"],
                 r"^run 1: .* for 8 games .*score \d\.\d{3} for alphabeta:depth=2$", marks=pytest.mark.slow),
], ids=["bench_env", "bench_solver", "bench_arena"])
def test_benchmarks(command, expect, shared_data):
    if "experiments.bench_solver" in command:
        command = [*command, f"--ffo-file={shared_data / 'ffo' / 'fforum-40-59.obf'}"]
    out = run(command)
    assert re.search(expect, out, re.M), out


@pytest.mark.slow  # ~4 minutes of CPU: the quickstart config compiled in two legs (one device, two)
def test_bench_cores():
    out = run([PYTHON, "-m", "experiments.bench_cores", "--iterations", "1"], timeout=1200)
    assert re.search(r"^all cores vs one: \d+\.\d\dx$", out, re.M), out


@pytest.mark.slow  # a benchmark the README does not name (34 s of CI), like test_bench_cores above
def test_bench_cores_times_the_supervised_step_on_both_layouts():
    """The supervised workload: one pinned device, then the batch split over one device per core."""
    out = run([PYTHON, "-m", "experiments.bench_cores", "--workload", "supervised:1x8", "--iterations", "2"],
              timeout=600)
    cores = len(os.sched_getaffinity(0))
    devices = max(d for d in range(1, cores + 1) if 256 % d == 0)
    assert re.search(r"^supervised learning \(1x8, batch 256\), 2 timed steps per leg", out, re.M), out
    assert re.search(r"^one +1 +\d+ ", out, re.M) and re.search(rf"^devices +{devices} +\d+ ", out, re.M), out
    assert re.search(r"^all cores vs one: \d+\.\d\dx$", out, re.M), out
