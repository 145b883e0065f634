"""Test-wide set-up: offline environment, paths to the shared data, small shared fixtures."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The service's warm spare grading process (judge/jobs/isolated_grading.py) is off in tests: every app a test starts
# would spawn one and load its model. The tests of the spare and of large jobs turn it on.
os.environ.setdefault("EXPJUDGE_ISOLATED_SPARE", "false")
# Tests never write into the user's ~/.expjudge store.
os.environ.setdefault("EXPJUDGE_DATABASE_URL", f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='expjudge-tests-')}/store.db")

from judge.settings import configure_offline_environment

configure_offline_environment()

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("EXPJUDGE_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
EXPBENCH_TASKS = SHARED_DATA / "expbench" / "tasks"
CURIE_RUNS = (SHARED_DATA / "expbench" / "historic_runs" / "curie_b1f623b" / "evaluation" / "neurips2024"
              / "93022" / "curie" / "azure-gpt-4o")
PAPER_93022 = EXPBENCH_TASKS / "neurips2024" / "93022_complete_final.json"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the shared data folder is missing: {SHARED_DATA} (CI has it at ../shared/data)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def curie_runs(shared_data: Path) -> list[Path]:
    runs = sorted(CURIE_RUNS.glob("*_eval_gen.json"))
    assert len(runs) == 8
    return runs
