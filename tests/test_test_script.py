"""scripts/test.sh finds the Colab-image leg's Python 3.13 wherever a user has it, and without one
skips that leg in one line, except under CI=true (scripts/colab_python.sh; the README's test command).

The discovery runs against fake PATHs and HOMEs: stand-in interpreters are shell scripts that
print a version, so nothing here depends on what this machine has installed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BASH = shutil.which("bash") or "/bin/bash"


def fake_python(path: Path, version: str = "3.13") -> Path:
    """An executable that answers the version check with ``version`` (``exit 127`` for "")."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {version}\n" if version else "#!/bin/sh\nexit 127\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def world(tmp_path):
    """An empty PATH directory and HOME, and an environment with nothing else to find."""
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    bin_dir.mkdir()
    home.mkdir()
    return {"bin": bin_dir, "home": home, "env": {"PATH": str(bin_dir), "HOME": str(home)}}


def discover(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([BASH, "-c", f". {REPO / 'scripts' / 'colab_python.sh'}; colab_leg_python"], env=env,
                          capture_output=True, text=True, timeout=60)


def test_colab_python_wins_over_everything(world, tmp_path):
    fake_python(world["bin"] / "python3.13")
    fake_python(world["home"] / ".pyenv" / "versions" / "3.13.1" / "bin" / "python3.13")
    chosen = fake_python(tmp_path / "colab" / "python")
    result = discover(dict(world["env"], COLAB_PYTHON=str(chosen)))
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{chosen}\n", "")


@pytest.mark.parametrize("version", ["missing", "3.12"])
def test_a_wrong_colab_python_is_an_error_not_a_skip(world, tmp_path, version):
    fake_python(world["bin"] / "python3.13")
    named = tmp_path / "colab" / "python"
    if version != "missing":
        fake_python(named, version)
    result = discover(dict(world["env"], COLAB_PYTHON=str(named)))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"error: COLAB_PYTHON={named} is not ") and result.stderr.count("\n") == 1


def test_python313_on_path_comes_before_pyenv(world):
    on_path = fake_python(world["bin"] / "python3.13")
    fake_python(world["home"] / ".pyenv" / "versions" / "3.13.1" / "bin" / "python3.13")
    result = discover(world["env"])
    assert (result.returncode, result.stdout) == (0, f"{on_path}\n")


@pytest.mark.parametrize("where", ["pyenv root", "PYENV_ROOT", "~/.pyenv"])
def test_pyenv_versions_are_found_newest_first_past_a_failing_shim(world, tmp_path, where):
    """A pyenv shim for a version that is not selected fails the check (as on this image); the
    newest 3.13 patch release in pyenv's versions is taken (3.13.10 over 3.13.9)."""
    fake_python(world["bin"] / "python3.13", version="")  # the shim: "pyenv: python3.13: command not found"
    env = dict(world["env"])
    root = world["home"] / ".pyenv"
    if where == "pyenv root":
        root = tmp_path / "elsewhere"
        pyenv = world["bin"] / "pyenv"
        pyenv.write_text(f'#!/bin/sh\n[ "$1" = root ] && echo {root}\n')
        pyenv.chmod(0o755)
    elif where == "PYENV_ROOT":
        root = tmp_path / "pyenv-root"
        env["PYENV_ROOT"] = str(root)
    for version in ("3.13.9", "3.13.10", "3.12.4"):
        fake_python(root / "versions" / version / "bin" / "python3.13", version[:4])
    fake_python(root / "versions" / "3.13.11" / "bin" / "python3.13", "3.12")  # a broken one is passed over
    result = discover(env)
    assert (result.returncode, result.stdout) == (0, f"{root / 'versions' / '3.13.10' / 'bin' / 'python3.13'}\n")


def test_none_found_skips_the_leg_in_one_line(world):
    result = discover(world["env"])
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Colab-image leg will be skipped" in result.stderr
    assert "COLAB_PYTHON" in result.stderr and "pyenv install 3.13" in result.stderr


def test_none_found_under_ci_is_an_error(world):
    result = discover(dict(world["env"], CI="true"))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: no Python 3.13 for the Colab-image leg (CI=true runs it)")
    assert result.stderr.count("\n") == 1


@pytest.fixture
def stand_in_repo(tmp_path, world):
    """A copy of the two scripts in a repository whose .venv tools are stand-ins that succeed."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("test.sh", "colab_python.sh"):
        shutil.copy(REPO / "scripts" / name, repo / "scripts" / name)
    (repo / ".venv" / "bin").mkdir(parents=True)
    for tool in ("python", "lint-imports", "ruff"):
        (repo / ".venv" / "bin" / tool).write_text("#!/bin/sh\nexit 0\n")
        (repo / ".venv" / "bin" / tool).chmod(0o755)
    (world["bin"] / "dirname").symlink_to(shutil.which("dirname"))
    return repo


@pytest.mark.parametrize("ci", [None, "true"])
def test_the_script_without_python313(stand_in_repo, world, ci):
    """Without CI the first leg runs and the script ends with status 0 after saying the Colab leg
    was skipped; with CI=true it stops with status 1 before installing anything."""
    env = dict(world["env"], **({"CI": ci} if ci else {}))
    result = subprocess.run([BASH, str(stand_in_repo / "scripts" / "test.sh")], env=env, capture_output=True,
                            text=True, timeout=60)
    if ci:
        assert result.returncode == 1 and result.stdout == "", result.stdout
        assert result.stderr.startswith("error: no Python 3.13 for the Colab-image leg")
    else:
        assert result.returncode == 0, result.stderr
        assert "Colab-image leg will be skipped" in result.stderr and result.stderr.count("\n") == 1
        assert "== installing newest versions into .venv" in result.stdout
        assert result.stdout.rstrip().endswith("== the Colab-image leg: skipped (no Python 3.13, see the first line)")
        assert "Colab's versions" not in result.stdout
