"""Fetch the WThor database from the Fédération Française d'Othello (standard library only).

The FFO publishes it on https://www.ffothello.org/informatique/la-base-wthor/ : one game file a
year from 1977, ``wthor/base/WTH_YYYY.wtb`` (the same zipped as ``wthor/base_zip/WTH_YYYY.ZIP``),
and the names files ``wthor/base/WTHOR.JOU`` (players) and ``wthor/base/WTHOR.TRN``
(tournaments). :func:`fetch_database` fills a directory with them:

- a file already there and whole (its header's count matches its size) is kept, so a second run
  downloads nothing; ``force`` fetches every file again;
- a download goes to ``NAME.part`` and is renamed only once checked, so the directory never holds
  a partial or invalid file under a name the readers read; a ``.part`` left by a broken run is
  resumed with an HTTP Range request, or restarted where the server ignores Range;
- a year missing as a plain file is tried as its zip archive; the current year's file may not be
  published yet, which is noted, not an error;
- the names files are fetched again whenever a game file was, since new games name new players.

Failures are one-line :class:`~othello_jax.errors.InputError` naming the URL: unreachable server,
an HTTP error, a file that is not WThor (removed, never kept), a download cut short (kept as
``.part`` for the next run to resume).
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple
from urllib.error import HTTPError, URLError
from urllib.parse import urljoin
from urllib.request import Request, urlopen

from othello_jax.data import wthor
from othello_jax.errors import InputError, first_line

SOURCE = "https://www.ffothello.org/wthor/"  # base/ holds the plain files, base_zip/ the zipped years
SOURCE_PAGE = "https://www.ffothello.org/informatique/la-base-wthor/"
FIRST_YEAR = 1977
PLAIN, ZIPPED = "base/", "base_zip/"
NAMES_FILES = (wthor.PLAYERS_FILE, wthor.TOURNAMENTS_FILE)
PART = ".part"
CHUNK_BYTES = 1 << 16
TIMEOUT_S = 60.0
USER_AGENT = "othello-jax (WThor database download)"

Opener = Callable[..., Any]  # urllib.request.urlopen(request, timeout=...)


class Fetched(NamedTuple):
    """What became of one file."""

    name: str
    status: str  # "kept" (already there and whole), "downloaded", "resumed" or "missing" (not on the server)
    url: str  # where it came from ("" when kept; every URL tried when missing)
    count: int  # games (a game file) or names (a names file) its header announces; 0 when missing
    size: int  # bytes
    resumed_at: int = 0  # bytes already there when a download resumed


def game_file(year: int) -> str:
    """The name of a year's game file."""
    return f"WTH_{year}.wtb"


def parse_years(text: str, last: int) -> list[int]:
    """``"1977-2025"``, ``"2004"`` or ``"2001,2003-2005"`` as sorted years, each in
    ``FIRST_YEAR..last``; a one-line :class:`InputError` otherwise."""
    years: set[int] = set()
    for part in text.replace(" ", "").split(","):
        match = re.fullmatch(r"(\d{4})(?:-(\d{4}))?", part)
        if not match:
            raise InputError(f"--years: {part!r} is not a year or a range of years (e.g. 2004, 1977-{last} "
                             "or 2001,2003-2005)")
        first, end = int(match[1]), int(match[2] or match[1])
        if not FIRST_YEAR <= first <= end <= last:
            raise InputError(f"--years: {part} is outside {FIRST_YEAR}-{last} (WThor starts in {FIRST_YEAR}) "
                             "or runs backwards")
        years.update(range(first, end + 1))
    return sorted(years)


def span(years: Iterable[int]) -> str:
    """Years in words: ``1977-2025`` when they run without a gap, else each listed."""
    years = sorted(years)
    if years and years == list(range(years[0], years[-1] + 1)):
        return f"{years[0]}-{years[-1]}" if len(years) > 1 else str(years[0])
    return ",".join(map(str, years))


def fetch_database(directory: str | os.PathLike, years: Iterable[int], source: str = SOURCE, force: bool = False,
                   log: Callable[[str], None] = lambda line: None, this_year: int | None = None,
                   opener: Opener = urlopen) -> list[Fetched]:
    """Fill ``directory`` with the game files of ``years`` and the names files from ``source`` (see the
    module docstring); ``log`` gets one line per file. A game file the server lacks is an error
    (after the others are fetched) unless its year is ``this_year``."""
    directory = Path(directory).expanduser()
    directory.mkdir(parents=True, exist_ok=True)
    root = source if source.endswith("/") else source + "/"
    done: list[Fetched] = []
    for year in years:
        urls = [urljoin(root, PLAIN + game_file(year)), urljoin(root, f"{ZIPPED}WTH_{year}.ZIP")]
        done.append(_fetch_file(directory, game_file(year), urls, force, opener))
        log(describe(done[-1], pending=year == this_year))
    renew = force or any(f.status in ("downloaded", "resumed") for f in done)
    for name in NAMES_FILES:
        done.append(_fetch_file(directory, name, [urljoin(root, PLAIN + name)], renew, opener))
        log(describe(done[-1]))
    absent = [f for f in done if f.status == "missing" and f.name != game_file(this_year or 0)]
    if absent:
        raise InputError(f"not on the server: {', '.join(f.name for f in absent)} (tried {absent[0].url}); "
                         f"check --years and --source (the FFO's page: {SOURCE_PAGE})")
    return done


def describe(fetched: Fetched, pending: bool = False) -> str:
    """One progress line about a file."""
    what = "names" if fetched.name in NAMES_FILES else "games"
    if fetched.status == "kept":
        return f"{fetched.name}: already there ({fetched.count:,} {what}), kept"
    if fetched.status == "missing":
        why = ", skipped: the current year's file may not be published yet" if pending else ""
        return f"{fetched.name}: not on the server ({fetched.url}){why}"
    resumed = f"resumed at {fetched.resumed_at:,} bytes, " if fetched.status == "resumed" else ""
    return f"{fetched.name}: {resumed}{fetched.size:,} bytes ({fetched.count:,} {what}) from {fetched.url}"


def summary(directory: Path, fetched: list[Fetched], default: Path) -> str:
    """The closing line: what the directory holds now (every whole game file in it, this run's or
    not), what this run did, and how the commands find it."""
    try:
        paths = wthor.game_files(directory)
    except wthor.WthorError:
        paths = []  # none: only the current year was asked for, and it is not published yet
    headers = {}
    for path in paths:
        try:
            headers[path.name] = wthor.check_file(path)
        except wthor.WthorError:
            pass  # not this run's, and damaged: not counted
    new = [f for f in fetched if f.status in ("downloaded", "resumed")]
    missing = [f.name for f in fetched if f.status == "missing"]
    did = f"{len(new)} files downloaded ({sum(f.size for f in new):,} bytes), " \
          f"{sum(f.status == 'kept' for f in fetched)} already there"
    did += f", not yet published: {', '.join(missing)}" if missing else ""
    where = ("every command reads it from there by default" if directory == default
             else f"point the commands at it with --wthor={directory} or {wthor.DIRECTORY_ENV}={directory}")
    years = span(int(name[4:8]) for name in headers)
    return (f"WThor database in {directory}: {len(headers)} game files ({years or 'none'}), "
            f"{sum(h.num_games for h in headers.values()):,} games; {did}; {where}")


def _fetch_file(directory: Path, name: str, urls: list[str], force: bool, opener: Opener) -> Fetched:
    """One file: kept if whole and not forced, else fetched from the first URL the server has."""
    target, part = directory / name, directory / (name + PART)
    if target.is_file() and not force:
        try:
            header = wthor.check_file(target)
            return Fetched(name, "kept", "", _count(header, name), target.stat().st_size)
        except wthor.WthorError:
            pass  # a damaged copy: fetched again
    for url in urls:
        zipped = url.lower().endswith(".zip")
        into = directory / (url.rsplit("/", 1)[-1] + PART) if zipped else part
        if force:
            into.unlink(missing_ok=True)  # a forced fetch starts afresh
        status, resumed_at = _download(url, into, opener)
        if status == "missing":
            continue
        if zipped:
            _unzip(into, name, part, url)
        header = _checked(part, name, url)
        os.replace(part, target)
        return Fetched(name, status, url, _count(header, name), target.stat().st_size, resumed_at)
    return Fetched(name, "missing", " and ".join(urls), 0, 0)


def _count(header: wthor.Header, name: str) -> int:
    return header.num_names if name in NAMES_FILES else header.num_games


def _download(url: str, part: Path, opener: Opener) -> tuple[str, int]:
    """Fetch ``url`` into ``part``, resuming what is there: ("downloaded" | "resumed", bytes resumed
    from) or ("missing", 0) for a 404; one-line InputError for anything else that goes wrong."""
    have = part.stat().st_size if part.is_file() else 0
    headers = {"User-Agent": USER_AGENT, **({"Range": f"bytes={have}-"} if have else {})}
    try:
        response = opener(Request(url, headers=headers), timeout=TIMEOUT_S)
    except HTTPError as error:
        error.close()
        if error.code == 404:
            return "missing", 0
        if error.code == 416 and have:  # the part is not a prefix of the file any more: start again
            part.unlink()
            return _download(url, part, opener)
        raise InputError(f"{url} answered HTTP {error.code} {error.reason}; retry later, or pass --source=URL "
                         "of a copy") from None
    except (URLError, OSError, http.client.HTTPException) as error:
        reason = error.reason if isinstance(error, URLError) else error
        raise InputError(f"cannot reach {url} ({first_line(reason)}); retry when the network is back, or give the "
                         f"commands a copy you have (--wthor=DIR or {wthor.DIRECTORY_ENV}=DIR)") from None
    with response:
        start = _range_start(response) if have and response.status == 206 else 0
        if start not in (0, have):  # a range the request did not ask for: start again
            part.unlink()
            return _download(url, part, opener)
        length = response.headers.get("Content-Length")
        expected = start + int(length) if length and length.isdigit() else None
        try:
            with part.open("ab" if start else "wb") as out:
                while chunk := response.read(CHUNK_BYTES):
                    out.write(chunk)
        except (OSError, http.client.HTTPException) as error:
            raise InputError(f"{url}: the download broke off ({first_line(error)}); run the command again to "
                             "resume it") from None
    size = part.stat().st_size
    if expected is not None and size != expected:
        raise InputError(f"{url}: the connection closed after {size:,} of {expected:,} bytes; run the command "
                         "again to resume it")
    return ("resumed" if start else "downloaded"), start


def _range_start(response: Any) -> int:
    """Where a 206 answer's ``Content-Range: bytes START-END/TOTAL`` starts (-1 when unreadable)."""
    match = re.fullmatch(r"bytes (\d+)-\d+/(\d+|\*)", response.headers.get("Content-Range", "").strip())
    return int(match[1]) if match else -1


def _unzip(archive: Path, name: str, part: Path, url: str) -> None:
    """Extract ``name`` (any case, any folder) from a downloaded archive into ``part``; the archive
    is removed either way."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = [m for m in zipped.namelist() if m.rsplit("/", 1)[-1].lower() == name.lower()]
            if not members:
                raise InputError(f"{url}: the archive holds no {name} (it holds {', '.join(zipped.namelist())})")
            with zipped.open(members[0]) as source, part.open("wb") as out:
                shutil.copyfileobj(source, out)
    except zipfile.BadZipFile as error:
        raise InputError(f"{url}: not a zip archive ({error}); not kept, check --source") from None
    finally:
        archive.unlink(missing_ok=True)


def _checked(part: Path, name: str, url: str) -> wthor.Header:
    """``part``'s header if it is a whole WThor ``name``; else it is removed and a one-line error raised."""
    try:
        return wthor.check_file(part, name)
    except wthor.WthorError as error:
        part.unlink(missing_ok=True)
        problem = str(error).removeprefix(f"{part}: ")
        raise InputError(f"{url} is not a valid {name} ({problem}); not kept, check --source") from None
