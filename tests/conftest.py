"""Shared test configuration.

Paths: the project root, the shipped catalog, and ``../shared`` (present on developer machines and in
CI beside the clone; tests that need it say so and fail loudly when it is missing in CI).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
SHARED = ROOT.parent / "shared"
ARTIFACTS = ROOT / "tests" / "artifacts"


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Folder for screenshots, exports and other files tests leave for people to look at."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` beside the project. Skipped outside CI when absent; an error in CI."""
    if not SHARED.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{SHARED} is missing: CI must run with shared/ beside the clone")
        pytest.skip(f"{SHARED} not present")
    return SHARED


@pytest.fixture(scope="module")
def catalog() -> pd.DataFrame:
    """The shipped catalog (``dashboard.catalog.load_catalog``), loaded once per test module; a module
    that needs another catalog defines its own ``catalog`` fixture."""
    from dashboard.catalog import load_catalog

    return load_catalog()
