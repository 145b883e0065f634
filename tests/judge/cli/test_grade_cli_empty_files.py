"""`expjudge grade` on all-added diffs that hold empty files, in the forms real tools write them (issue 12)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from judge.cli.main import _register_commands, app

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_TASK = REPO / "examples" / "expbench" / "93022_complete_final.json"
EXAMPLE_RUN = REPO / "examples" / "expbench" / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json"

_register_commands()
runner = CliRunner()

# The example's one added script, rewritten as git writes an added file.
_SCRIPT_BODY = EXAMPLE_RUN.with_suffix(".patch").read_text().split("\n@@ ", 1)[1]
CODE_ENTRY = (
    "diff --git a/scripts/run.sh b/scripts/run.sh\nnew file mode 100755\nindex 0000000..1a2b3c4\n"
    f"--- /dev/null\n+++ b/scripts/run.sh\n@@ {_SCRIPT_BODY}"
)
EMPTY_ENTRIES = (
    # A repository dumped as all-added hunks: the empty file gets a hunk header and no body line.
    "diff --git a/sim_inference.py b/sim_inference.py\nnew file mode 100644\nindex 0000000..e69de29\n"
    "--- /dev/null\n+++ b/sim_inference.py\n@@ -0,0 +1,0 @@\n"
    "--- /dev/null\n+++ b/scripts/__init__.py\n@@ -0,0 +1,0 @@\n"
    # git itself: no hunk, with and without the ---/+++ pair.
    "diff --git a/scripts/analyze_peptide_sim.py b/scripts/analyze_peptide_sim.py\nnew file mode 100644\n"
    "index 0000000..e69de29\n--- /dev/null\n+++ b/scripts/analyze_peptide_sim.py\n"
    "diff --git a/results/.gitkeep b/results/.gitkeep\nnew file mode 100644\nindex 0000000..e69de29\n"
    "diff --git a/results/plot.png b/results/plot.png\nnew file mode 100644\nindex 0000000..5555555\n"
    "Binary files /dev/null and b/results/plot.png differ\n"
)


def _grade(tmp_path: Path, name: str, patch: str) -> dict[str, Any]:
    run_dir = tmp_path / name
    run_dir.mkdir()
    submission = run_dir / EXAMPLE_RUN.name
    shutil.copy(EXAMPLE_RUN, submission)
    submission.with_suffix(".patch").write_text(patch)
    result = runner.invoke(app, ["grade", "--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission",
                                 str(submission), "--json"])
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_all_added_diff_with_empty_files_in_every_form_grades(tmp_path: Path) -> None:
    for patch in (CODE_ENTRY + EMPTY_ENTRIES, EMPTY_ENTRIES + CODE_ENTRY):
        with_empty = _grade(tmp_path, f"with_empty_{len(list(tmp_path.iterdir()))}", patch)
        implementation = [leaf for leaf in with_empty["leaves"] if leaf["stage"] == "implementation"]
        assert implementation and all(leaf["verdict"] != "unscored" for leaf in implementation)
        # The only code to align is the script's: an empty file yields no unit of its own. A leaf the script is
        # far from says that nothing does it and names no unit (issue 36).
        assert any("scripts/run.sh:" in leaf["rationale"] for leaf in implementation) or all(
            leaf["rationale"].startswith("Nothing in the submission does") for leaf in implementation)
        assert not any(name in leaf["rationale"] for leaf in implementation
                       for name in ("sim_inference.py", "__init__.py", "analyze_peptide_sim.py", ".gitkeep"))
    code_only = _grade(tmp_path, "code_only", CODE_ENTRY)
    # Empty files add no line to align, so every leaf is judged exactly as on the code alone.
    assert [(leaf["leaf_id"], leaf["verdict"], leaf["score"]) for leaf in with_empty["leaves"]] == [
        (leaf["leaf_id"], leaf["verdict"], leaf["score"]) for leaf in code_only["leaves"]
    ]
    assert with_empty["submission_hash"] != code_only["submission_hash"]
