"""CLI output and help keep every figure and word: the grade table folds long text instead of cutting it at a
character count, and `--help` is laid out at least 100 columns wide, so that no option's help is cut at 80."""

from __future__ import annotations

import subprocess

from rich.console import Console

from judge.cli.grade_cmd import render_grade
from judge.devtools.local_services import expjudge_command, offline_env
from judge.grading.grader import fingerprint_for
from judge.judges.embedded import EmbeddedJudge
from judge.models import CalibrationStatus, LeafResult
from judge.rubric_loader import load_rubric
from tests.judge.store.conftest import make_grade


def test_the_grade_table_cuts_no_figure_or_text() -> None:
    # The figure sits where the old 160-character cut fell ("... got 0" for 0.40).
    rationale = ("The judge compared the hunk with the requirement; " * 3 + "unit got 0.40 "
                 "against the requirement, below the 0.55 needed; the rest follows here")
    assert rationale[:160].endswith("got 0")
    target = "Implement the evaluation loop that reports RMSD per molecule " * 3 + "END-OF-TARGET"
    leaf = LeafResult(leaf_id="requirement.0", template_id="requirement", stage="implementation", title="R",
                      target=target, verdict="fail", score=0.0, confidence=0.4, rationale=rationale, judge="embedded")
    fingerprint = fingerprint_for(load_rubric("expbench-v1"), EmbeddedJudge())
    calibration = CalibrationStatus(calibrated=False, reason="labels too few (12): 30 per class needed, fail has 5",
                                    kappa=0.612, kappa_ci=(0.2, 0.9), n_items=12)
    grade = make_grade(fingerprint, leaves=[leaf], calibration=calibration)
    console = Console(width=80, record=True, color_system=None)
    render_grade(grade, console)
    text = console.export_text()
    table = text[text.index("Leaves"):]
    rows = [line.split("│") for line in table.splitlines() if line.startswith("│")]
    column = {name: " ".join(" ".join(row[i].strip() for row in rows if len(row) == 7).split())
              for i, name in ((4, "target"), (5, "why"))}  # each cell's lines joined again
    assert column["why"] == " ".join(rationale.split())
    assert column["target"] == target.strip() and "…" not in text
    flat = " ".join(text.split())
    assert "not calibrated: labels too few (12): 30 per class needed, fail has 5" in flat
    assert "kappa 0.612 [0.200, 0.900]" in flat


def test_regrade_help_is_not_cut_at_80_columns() -> None:
    for command in ("regrade", "tune"):
        done = subprocess.run([*expjudge_command(), command, "--help"], env=offline_env(COLUMNS="80"),
                              capture_output=True, text=True, timeout=180, check=False)
        assert done.returncode == 0, done.stderr
        assert "…" not in done.stdout, done.stdout
    assert "<paper>_complete_final.json" in done.stdout or command == "tune"
