"""`othello-jax wthor download` against a local HTTP server laid out as the FFO's site (base/ plain
files, base_zip/ zipped years): the readers read what it fetches, a second run fetches nothing, a
download cut short resumes (Range honoured or not), a file that is not WThor is refused and not
kept, an unreachable server is one line and exit 2, and every reader defaults to the user cache
and names the download command when the database is missing. Nothing here contacts the real site."""

from __future__ import annotations

import datetime
import re
import socket
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from othello_jax import cli
from othello_jax.commands import accuracy as accuracy_command
from othello_jax.data import wthor, wthor_download
from tests.wthor_helpers import sample_games, write_games, write_players, write_tournaments

PLAYERS = ["Tastet Marc", "Lazard Emmanuel", "Nicolet Stéphane", "Shaman Brian"]
TOURNAMENTS = ["Championnat de France", "World Championship", "Paris Open"]
GAMES = {2001: 40, 2002: 60, 2003: 25}  # 2003 is served only zipped, as base_zip/WTH_2003.ZIP
THIS_YEAR = datetime.date.today().year


class Site(ThreadingHTTPServer):
    """The FFO's WThor folder on 127.0.0.1: files under ``root``; Range honoured or not; a file can be
    cut short once (its full Content-Length announced, then the connection closed)."""

    daemon_threads = True

    def __init__(self, root: Path):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root, self.ranges = root, True
        self.cut: dict[str, int] = {}  # file name -> bytes sent before closing, once
        self.requests: list[tuple[str, str | None]] = []  # (path, Range header)
        self.sent: dict[str, int] = {}  # path -> body bytes sent

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/wthor/"


class _Handler(BaseHTTPRequestHandler):
    server: Site

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        site, wanted = self.server, self.headers.get("Range")
        site.requests.append((self.path, wanted))
        file = site.root / self.path.removeprefix("/wthor/")
        if not file.is_file():
            self.send_error(404)
            return
        data, start = file.read_bytes(), 0
        if wanted and site.ranges:
            start = int(re.fullmatch(r"bytes=(\d+)-", wanted)[1])
            if start >= len(data):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        body = body[:site.cut.pop(file.name)] if file.name in site.cut else body
        self.wfile.write(body)
        site.sent[self.path] = site.sent.get(self.path, 0) + len(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def site(tmp_path):
    """A server holding base/WTH_2001.wtb, base/WTH_2002.wtb, base_zip/WTH_2003.ZIP and the names files."""
    root = tmp_path / "site"
    (root / "base").mkdir(parents=True)
    (root / "base_zip").mkdir()
    for year, count in GAMES.items():
        write_games(root / "base" / wthor_download.game_file(year), sample_games(count, year), year,
                    datetime.date(2024, 1, 1), depth=24)
    with zipfile.ZipFile(root / "base_zip" / "WTH_2003.ZIP", "w") as archive:
        archive.write(root / "base" / "WTH_2003.wtb", "WTH_2003.wtb")
    (root / "originals").mkdir()
    (root / "base" / "WTH_2003.wtb").rename(root / "originals" / "WTH_2003.wtb")
    write_players(root / "base" / "WTHOR.JOU", PLAYERS)
    write_tournaments(root / "base" / "WTHOR.TRN", TOURNAMENTS)
    server = Site(root)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def original(site: Site, name: str) -> bytes:
    """A file's bytes as the site holds them (WTH_2003.wtb as inside its zip)."""
    plain = site.root / "base" / name
    return plain.read_bytes() if plain.is_file() else (site.root / "originals" / name).read_bytes()


def download(capsys, *args: str) -> tuple[int, str, str]:
    """`othello-jax wthor download ARGS` in process: (exit status, stdout, stderr)."""
    code = cli.main(["wthor", "download", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_download_fills_a_directory_the_readers_read_and_a_second_run_fetches_nothing(site, tmp_path, capsys):
    target = tmp_path / "db"
    code, out, err = download(capsys, f"--dir={target}", "--years=2001-2003", f"--source={site.url}")
    assert code == 0, err
    database = wthor.load_database(target)
    assert database.files == ("WTH_2001.wtb", "WTH_2002.wtb", "WTH_2003.wtb")
    assert database.games.num_games == sum(GAMES.values())
    assert database.players == PLAYERS and database.tournaments == TOURNAMENTS
    for name in (*database.files, "WTHOR.JOU", "WTHOR.TRN"):
        assert (target / name).read_bytes() == original(site, name), name
    assert sorted(p.name for p in target.iterdir()) == ["WTHOR.JOU", "WTHOR.TRN", *database.files]  # no .part, .ZIP
    # 2003 came from its zip once the plain file answered 404
    assert [path for path, _ in site.requests if "2003" in path] == ["/wthor/base/WTH_2003.wtb",
                                                                      "/wthor/base_zip/WTH_2003.ZIP"]
    lines = err.splitlines()
    assert len(lines) == 1 + 5 and f"WTH_2003.wtb: {len(original(site, 'WTH_2003.wtb')):,} bytes (25 games)" in err
    assert out == (f"WThor database in {target}: 3 game files (2001-2003), 125 games; 5 files downloaded "
                   f"({sum(len(original(site, n)) for n in (*database.files, 'WTHOR.JOU', 'WTHOR.TRN')):,} bytes), "
                   f"0 already there; point the commands at it with --wthor={target} or OTHELLO_JAX_WTHOR={target}\n")

    site.requests.clear()
    code, out, err = download(capsys, f"--dir={target}", "--years=2001-2003", f"--source={site.url}")
    assert code == 0 and site.requests == [], site.requests
    assert "0 files downloaded (0 bytes), 5 already there" in out and err.count("already there") == 5
    (target / "WTH_2001.wtb").write_bytes(original(site, "WTH_2001.wtb")[:-1])  # a damaged copy is fetched again,
    code, out, _ = download(capsys, f"--dir={target}", "--years=2001-2003", f"--source={site.url}")
    assert code == 0 and (target / "WTH_2001.wtb").read_bytes() == original(site, "WTH_2001.wtb")
    assert "games; 3 files downloaded" in out  # and the names files with it (new games may name new players)
    code, out, _ = download(capsys, f"--dir={target}", "--years=2001-2003", f"--source={site.url}", "--force")
    assert code == 0 and "games; 5 files downloaded" in out
    code, out, _ = download(capsys, f"--dir={target}", "--years=2002", f"--source={site.url}")  # the whole directory
    assert code == 0 and out.startswith(f"WThor database in {target}: 3 game files (2001-2003), 125 games; 0 files")


@pytest.mark.parametrize("ranges", [True, False], ids=["range", "no-range"])
def test_a_download_cut_short_resumes_where_it_stopped_or_restarts_where_range_is_ignored(site, tmp_path, capsys,
                                                                                           ranges):
    target, whole = tmp_path / "db", original(site, "WTH_2002.wtb")
    site.ranges, site.cut = ranges, {"WTH_2002.wtb": 1000}
    code, _, err = download(capsys, f"--dir={target}", "--years=2001-2002", f"--source={site.url}")
    assert code == 2 and err.count("\n") == 1 + 2, err  # the opening line, 2001's, then the error
    assert err.splitlines()[-1] == (f"othello-jax wthor: error: {site.url}base/WTH_2002.wtb: the connection closed "
                                    f"after 1,000 of {len(whole):,} bytes; run the command again to resume it")
    assert (target / "WTH_2002.wtb.part").stat().st_size == 1000 and not (target / "WTH_2002.wtb").exists()

    site.requests.clear()
    site.sent.clear()
    code, _, err = download(capsys, f"--dir={target}", "--years=2001-2002", f"--source={site.url}")
    assert code == 0, err
    assert (target / "WTH_2002.wtb").read_bytes() == whole and not (target / "WTH_2002.wtb.part").exists()
    assert ("/wthor/base/WTH_2002.wtb", "bytes=1000-") in site.requests
    assert site.sent["/wthor/base/WTH_2002.wtb"] == (len(whole) - 1000 if ranges else len(whole))
    assert ("WTH_2002.wtb: resumed at 1,000 bytes" in err) == ranges
    assert len(wthor.load_database(target).players) == len(PLAYERS)


def test_a_part_longer_than_the_file_is_fetched_again(site, tmp_path, capsys):
    """A server answering 416 to the Range of a stale .part: the file is fetched from its start."""
    (tmp_path / "db").mkdir()
    whole = original(site, "WTH_2001.wtb")
    (tmp_path / "db" / "WTH_2001.wtb.part").write_bytes(whole + b"stale")
    code, _, err = download(capsys, f"--dir={tmp_path / 'db'}", "--years=2001", f"--source={site.url}")
    assert code == 0, err
    assert (tmp_path / "db" / "WTH_2001.wtb").read_bytes() == whole
    assert [wanted for path, wanted in site.requests if path.endswith("WTH_2001.wtb")] == [
        f"bytes={len(whole) + 5}-", None]


@pytest.mark.parametrize("damage", ["count", "page"])
def test_a_file_that_is_not_wthor_is_refused_in_one_line_and_not_kept(site, tmp_path, capsys, damage):
    served = site.root / "base" / "WTH_2002.wtb"
    data = served.read_bytes()
    served.write_bytes(data[:-68] if damage == "count" else b"<html><body>Not here any more</body></html>")
    target = tmp_path / "db"
    code, _, err = download(capsys, f"--dir={target}", "--years=2002", f"--source={site.url}")
    assert code == 2 and err.splitlines()[-1].startswith(
        f"othello-jax wthor: error: {site.url}base/WTH_2002.wtb is not a valid WTH_2002.wtb (")
    problem = "truncated: the header announces 60 games" if damage == "count" else "board size"
    assert problem in err.splitlines()[-1] and "not kept" in err
    assert list(target.iterdir()) == []


def test_an_unreachable_server_is_one_line_and_exit_2(tmp_path, capsys):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, out, err = download(capsys, f"--dir={tmp_path / 'db'}", f"--source=http://127.0.0.1:{port}/wthor/",
                              "--years=2001")
    lines = err.splitlines()
    assert code == 2 and out == "" and len(lines) == 2, err
    assert lines[1].startswith(f"othello-jax wthor: error: cannot reach http://127.0.0.1:{port}/wthor/base/"
                               "WTH_2001.wtb (")
    assert "retry when the network is back, or give the commands a copy you have (--wthor=DIR" in lines[1]
    assert list((tmp_path / "db").iterdir()) == []


def test_a_year_the_server_lacks_is_an_error_unless_it_is_this_year(site, tmp_path, capsys):
    target = tmp_path / "db"
    code, _, err = download(capsys, f"--dir={target}", "--years=2001,1990", f"--source={site.url}")
    assert code == 2 and err.splitlines()[-1].startswith(
        f"othello-jax wthor: error: not on the server: WTH_1990.wtb (tried {site.url}base/WTH_1990.wtb and "
        f"{site.url}base_zip/WTH_1990.ZIP); check --years and --source")
    assert (target / "WTH_2001.wtb").is_file()  # the rest is fetched first
    code, out, err = download(capsys, f"--dir={target}", f"--years=2001,{THIS_YEAR}", f"--source={site.url}")
    assert code == 0, err
    assert f"WTH_{THIS_YEAR}.wtb: not on the server" in err and f"not yet published: WTH_{THIS_YEAR}.wtb" in out


@pytest.mark.parametrize("years", ["1976", "2001-1999", "20o1", f"2001-{THIS_YEAR + 1}"])
def test_bad_years_are_one_line(capsys, tmp_path, years):
    code, _, err = download(capsys, f"--dir={tmp_path}", f"--years={years}", "--source=http://127.0.0.1:9/")
    assert code == 2 and err.startswith("othello-jax wthor: error: --years: ") and err.count("\n") == 1


def test_the_default_directory_is_the_env_var_else_the_user_cache():
    assert wthor.default_directory({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/x/othello-jax/wthor")
    assert wthor.default_directory({"HOME": "/h"}) == Path("/h/.cache/othello-jax/wthor")
    assert wthor.default_directory({"OTHELLO_JAX_WTHOR": "/d", "XDG_CACHE_HOME": "/x"}) == Path("/d")
    assert wthor.resolve_directory("", {"HOME": "/h"}) == wthor.resolve_directory(None, {"HOME": "/h"})
    assert wthor.resolve_directory("/given", {"HOME": "/h"}) == Path("/given")


def test_the_command_fills_the_user_cache_where_the_readers_look(site, tmp_path, monkeypatch, capsys):
    """As users run it: the installed `othello-jax`, no --dir; then `accuracy` and the supervised
    trainer find the cache without a flag, and name the download command where it is empty."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "OTHELLO_JAX_XLA_CACHE": "off"}  # no compilation cache: the command starts without jax
    tool = str(Path(sys.executable).parent / "othello-jax")
    done = subprocess.run([tool, "wthor", "download", "--years=2001-2002", f"--source={site.url}"],
                          capture_output=True, text=True, timeout=120, env=env)
    cache = tmp_path / "cache" / "othello-jax" / "wthor"
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("; every command reads it from there by default\n")
    assert wthor.load_database(cache).files == ("WTH_2001.wtb", "WTH_2002.wtb")
    assert wthor.require_database(None, "pass --wthor=DIR", env) == cache

    monkeypatch.delenv(wthor.DIRECTORY_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))
    missing = (f"WThor database not found at {tmp_path / 'empty' / 'othello-jax' / 'wthor'}; run "
               "`othello-jax wthor download` to fetch the Fédération Française d'Othello's expert games (~9 MB), or ")
    assert accuracy_command.main(["--checkpoint=builtin:8x8-expert"]) == 2
    assert capsys.readouterr().err == f"othello-jax accuracy: error: {missing}pass --wthor=DIR\n"
    from experiments.configs.supervised import get_config
    from othello_jax.training.supervised import trainer

    config = get_config("test")
    assert config.data.wthor_dir == ""
    with pytest.raises(wthor.WthorError, match=re.escape(missing + "set --config.data.wthor_dir")):
        trainer.check_config(config)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert trainer.check_config(config).data.wthor_dir == ""
