"""`expjudge calibrate` on a CRScore label set whose raters' files reuse one diff id for two diffs (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli.main import _register_commands, app
from judge.settings import get_settings

_register_commands()
runner = CliRunner()
COLLISION = Path(__file__).resolve().parent / "fixtures" / "crscore_collision"


def test_calibrate_scores_both_diffs_of_a_reused_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPJUDGE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    get_settings.cache_clear()
    try:
        result = runner.invoke(app, ["calibrate", "--labels", str(COLLISION), "--out", str(tmp_path / "out"),
                                     "--judge", "embedded", "--no-progress", "--bootstrap", "50"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    judged = {p["item_id"]: p for p in report["meta"]["predictions"]}
    # Every claim of the fixture carries a label, so all 8 are judged: 2 + 2 + 1 + 3 claims over 4 diffs.
    assert len(judged) == 8
    reused = sorted({item_id.rsplit(":", 1)[0] for item_id in judged if item_id.startswith("crscore:js:777~")})
    assert len(reused) == 2
    assert sum(item_id.startswith(f"{reused[0]}:") for item_id in judged) in (2, 3)
    assert {f"crscore:js:301:{k}" for k in range(2)} | {"crscore:js:302:0"} <= set(judged)
    assert all(p["predicted"] is not None for p in judged.values())
    (warning,) = [w for w in report["warnings"] if "'777'" in w]
    assert all(group in warning for group in reused)
    # The human ceiling is measured on the pairs both raters labelled, the reused id's included.
    assert report["ceiling"]["n_paired"] == 6
