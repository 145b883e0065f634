"""Shared fixtures of the calibration tests."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MINI_CRSCORE = HERE / "fixtures" / "crscore_mini"
# The shared data sit next to the checkout (../shared/data); CI has them too.
SHARED_CRSCORE = HERE.parents[1].parent / "shared" / "data" / "crscore_claims"


@pytest.fixture
def mini_crscore() -> Path:
    """A hand-made CRScore-format folder whose counts are known by construction (see test_calib_crscore)."""
    return MINI_CRSCORE


@pytest.fixture
def shared_crscore() -> Path:
    """The real CRScore Python and Java claim labels."""
    if not SHARED_CRSCORE.is_dir():
        pytest.skip(f"shared data not found at {SHARED_CRSCORE}")
    return SHARED_CRSCORE
