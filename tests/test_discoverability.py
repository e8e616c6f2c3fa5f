"""What a new user finds without reading the source: `othello-jax --version`, every command's
--help in plain text, the shipped training configs listed by `train --help` and accepted by name
(from an installed wheel too, outside any checkout), and `make-testset` writing where the user
is, never into the installed package unless asked."""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from othello_jax import cli
from othello_jax.commands import make_testset
from othello_jax.commands import train as train_command
from othello_jax.solver import solved_moves

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "experiments" / "configs"
SHIPPED = sorted(path.stem for path in CONFIGS.glob("*.py") if path.stem != "__init__")
MARKUP = ("``", ":func:", ":class:", ":mod:", ":meth:", ":data:", ":attr:")


def run_main(argv: list[str], capsys) -> tuple[int, str, str]:
    """``cli.main(argv)`` in process: (exit status, stdout, stderr); argparse's exit counts as one."""
    try:
        code = cli.main(argv)
    except SystemExit as stop:
        code = stop.code or 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_command_help_is_plain_text(command, capsys):
    code, out, err = run_main([command, "--help"], capsys)
    assert code == 0 and err == "" and f"othello-jax {command}" in out
    found = [markup for markup in MARKUP if markup in out]
    assert not found, f"`othello-jax {command} --help` shows reStructuredText markup {found}:\n{out}"


def test_version_is_one_line_of_the_installed_versions_without_importing_jax():
    code = ("import sys; from othello_jax import cli; status = cli.main(['--version']); "
            "print('jax imported' if 'jax' in sys.modules else 'jax not imported'); sys.exit(status)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    line, imported = done.stdout.splitlines()
    version = importlib.metadata.version
    assert line.startswith(f"othello-jax {version('othello-jax')} (jax {version('jax')}, ")
    for name in ("jaxlib", "flax", "mctx", "orbax-checkpoint"):
        assert f" {name} {version(name)}" in line, line
    assert f"Python {sys.version.split()[0]})" in line and imported == "jax not imported"


def _first_sentence(path: Path) -> str:
    """An independent reading of a config's summary: its docstring's first sentence, markup removed."""
    doc = ast.get_docstring(ast.parse(path.read_text()))
    paragraph = " ".join(doc.split("\n\n")[0].split()).replace("``", "")
    return re.split(r"(?<=\.) ", paragraph)[0]


def test_train_help_lists_every_shipped_config_with_its_summary(capsys):
    code, out, _ = run_main(["train", "--help"], capsys)
    assert code == 0 and len(SHIPPED) >= 8
    listed = out.split("shipped configs (--config=NAME):\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed] == SHIPPED
    for line, name in zip(listed, SHIPPED, strict=True):
        summary = line.split(None, 1)[1]
        full = _first_sentence(CONFIGS / f"{name}.py")
        assert summary == full or (summary.endswith(" ...") and full.startswith(summary[:-4])), (summary, full)


def test_a_config_by_name_is_the_config_by_path(tmp_path):
    workdir = str(tmp_path / "run")
    for name, path in [("othello6_cpu", "experiments/configs/othello6_cpu.py"),
                       ("tiny_test.py", "experiments/configs/tiny_test.py"),
                       ("supervised:cpu", "experiments/configs/supervised.py:cpu")]:
        by_name, _ = train_command.parse([f"--config={name}", f"--workdir={workdir}", "--config.seed=3"])
        by_path, _ = train_command.parse([f"--config={REPO / path}", f"--workdir={workdir}", "--config.seed=3"])
        assert by_name.to_dict() == by_path.to_dict() and by_name.seed == 3
    config, _ = train_command.parse(["--config", "tiny_test", f"--workdir={workdir}"])
    assert config.board_size == 4


def test_an_unknown_config_is_one_line_listing_the_names(capsys, tmp_path):
    for argv in (["train", "--config=othello9_cpu", f"--workdir={tmp_path / 'run'}"],
                 ["train", "--config=othello9_cpu", "--help"]):
        code, out, err = run_main(argv, capsys)
        lines = err.strip().splitlines()
        assert code == 2 and out == "" and len(lines) == 1, (out, err)
        assert lines[0] == ("othello-jax train: error: no shipped config named 'othello9_cpu'; give a config file or "
                            f"a shipped config's name: {', '.join(SHIPPED)}")
    assert not (tmp_path / "run").exists()


def test_train_help_with_a_config_names_its_file(capsys):
    code, out, _ = run_main(["train", "--config=othello6_cpu", "--help"], capsys)
    assert code == 0
    assert f"--config={CONFIGS / 'othello6_cpu.py'}: {_first_sentence(CONFIGS / 'othello6_cpu.py')}" in out


def test_train_supervised_takes_config_names_through_the_same_resolver(tmp_path):
    """`python -m experiments.train_supervised --config=supervised:cpu` from outside the checkout:
    the named config loads (its run then stops at the WThor directory given), an unknown name is
    one line listing the names."""
    def supervised(config: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "experiments.train_supervised", f"--config={config}",
                               f"--workdir={tmp_path / 'run'}", "--config.data.wthor_dir=/nonexistent/wthor"],
                              cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                              text=True, timeout=300)

    named = supervised("supervised:cpu")
    assert named.returncode == 2 and named.stderr == (
        "train_supervised: WThor database not found at /nonexistent/wthor; run `othello-jax wthor download` to "
        "fetch the Fédération Française d'Othello's expert games (~9 MB), or set --config.data.wthor_dir\n")
    unknown = supervised("supervized")
    assert unknown.returncode == 2 and unknown.stderr == (
        f"train_supervised: no shipped config named 'supervized'; give a config file or a shipped config's name: "
        f"{', '.join(SHIPPED)}\n")
    assert not (tmp_path / "run").exists()


def _build_wheel(out: Path) -> Path:
    """A wheel of the project, built from a copy of its sources (the checkout gets no build/ or
    egg-info), offline when the environment's setuptools can build it, else in pip's isolated
    build environment."""
    source = out / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "build")
    for package in ("othello_jax", "experiments"):
        shutil.copytree(REPO / package, source / package, ignore=ignore)
    try:
        setuptools_major = int(importlib.metadata.version("setuptools").split(".")[0])
    except importlib.metadata.PackageNotFoundError:
        setuptools_major = 0
    offline = ["--no-build-isolation"] if setuptools_major >= 77 else []
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *offline, "-w", str(out), "."],
                          cwd=source, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    (wheel,) = out.glob("othello_jax-*.whl")
    return wheel


def test_an_installed_wheel_finds_its_configs_by_name_outside_the_checkout(tmp_path):
    """The wheel installed on its own (`pip install --target`, the dependencies are this
    environment's), run from a directory outside the checkout: the configs resolve from the
    installed copy, not from the source tree."""
    wheel = _build_wheel(tmp_path)
    target = tmp_path / "installed"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                           str(wheel)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    installed_configs = target / "experiments" / "configs"
    assert sorted(p.stem for p in installed_configs.glob("*.py") if p.stem != "__init__") == SHIPPED

    def installed(*args: str) -> str:
        result = subprocess.run([str(target / "bin" / "othello-jax"), *args], cwd=elsewhere, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    out = installed("train", "--config=othello6_cpu", "--help")
    assert f"--config={installed_configs / 'othello6_cpu.py'}: 6x6 Othello" in out
    assert installed("--version").startswith("othello-jax 0.1.0 (jax ")
    probe = ("import othello_jax; from othello_jax.commands.train import parse; "
             "config, _ = parse(['--config=tiny_test', '--workdir=w', '--config.iterations=1']); "
             "print(othello_jax.__file__, config.board_size, config.iterations)")
    result = subprocess.run([sys.executable, "-c", probe], cwd=elsewhere, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == [str(target / "othello_jax" / "__init__.py"), "4", "1"]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_make_testset_writes_where_the_user_is_never_into_the_package(tmp_path, monkeypatch, capsys):
    packaged = solved_moves.DEFAULT_PATH
    before = _sha(packaged)
    monkeypatch.chdir(tmp_path)
    assert make_testset.main(["--count=4", "--low=8", "--high=9", "--workers=1"]) == 0
    assert "written to testset6.npz" in capsys.readouterr().out
    assert len(solved_moves.load(tmp_path / "testset6.npz")) == 4
    assert _sha(packaged) == before
    for argv, message in [(["--packaged", "--out=x.npz"], "give --out=FILE or --packaged, not both"),
                          (["--packaged", "--size=4", "--low=8", "--high=10"],
                           "--packaged is the 6x6 test set; --size=4 needs --out=FILE")]:
        assert make_testset.main(argv) == 2
        assert capsys.readouterr().err == f"othello-jax make-testset: error: {message}\n"
    assert make_testset.output_path(make_testset.build_parser().parse_args(["--packaged"])) == packaged
    assert make_testset.output_path(make_testset.build_parser().parse_args(["--size=4"])) == Path("testset4.npz")
    assert _sha(packaged) == before
