"""Shared test fixtures: the reference data directory from outside the project."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("OTHELLO_JAX_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (FFO, XOT, WThor); a missing directory is an error, never a skip."""
    if not SHARED_DATA.is_dir():
        raise FileNotFoundError(f"reference data not found at {SHARED_DATA}; set OTHELLO_JAX_SHARED_DATA")
    return SHARED_DATA
