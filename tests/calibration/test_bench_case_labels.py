"""bench/cases: a variant that removes or empties a requirement's cited lines while a twin of each stays elsewhere
in the submission has not removed its code, so its leaf gets no target (and drop-one picks another requirement).

A small hand-made task: two scripts, where `b.py` repeats the one line requirement 1 cites in `a.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.extend(str(d) for d in sorted((ROOT / "bench").iterdir()) if d.is_dir())

from evidence_gold import GoldCase, Span, parse_added_diff  # noqa: E402
from location_variants import half_removed  # noqa: E402
from reference_cases import held_elsewhere, variants  # noqa: E402
from reference_variants import added_diff  # noqa: E402

from judge.models import Task  # noqa: E402

A = "import torch\n\ndef train(model):\n    model.train()\n    loss = model.step()\n    return loss\n\n" \
    "def evaluate(model):\n    model.eval()\n    return model.score()\n"
B = "def run(model):\n    model.eval()\n    print('done')\n"


def _case() -> GoldCase:
    diff = added_diff({"a.py": A, "b.py": B})
    task = Task(task_id="1:0", question="q", requirements=["train the model", "set evaluation mode",
                                                           "score the model"])
    cited = {0: [Span("a.py", 4, 5)], 1: [Span("a.py", 9, 9)], 2: [Span("a.py", 10, 10)]}
    return GoldCase(paper="1", task=task, diff=diff, blocks=parse_added_diff(diff), cited=cited)


def test_a_line_kept_elsewhere_is_held_and_a_removed_one_is_not() -> None:
    case = _case()
    without_eval = added_diff({"a.py": A.replace("    model.eval()\n", ""), "b.py": B})
    assert held_elsewhere(case, 1, without_eval)  # b.py still sets evaluation mode
    assert not held_elsewhere(case, 0, added_diff({"a.py": A.replace("    loss = model.step()\n", ""), "b.py": B}))
    assert not held_elsewhere(case, 1, added_diff({"a.py": A.replace("    model.eval()\n", "")}))


def test_half_removed_gives_a_leaf_whose_lines_stay_elsewhere_no_target() -> None:
    expected = half_removed(_case()).expected  # requirement 1 (every other cited one) is removed
    assert expected[1] is None
    assert expected[0] == "pass" and expected[2] == "pass"


def test_drop_one_skips_a_requirement_whose_lines_stay_elsewhere() -> None:
    drops = [v for v in variants(_case(), [], drops=2, restatements=False) if v.kind == "drop"]
    assert [v.dropped for v in drops] == [0, 2]
    assert all(v.expected[v.dropped] == "fail" for v in drops)
