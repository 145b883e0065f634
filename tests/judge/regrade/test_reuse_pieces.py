"""A cached rerun writes a reused grade's line of grades.jsonl from its pieces (the new head and tail around a view of
the cached verdicts), never joined: the same bytes as the joined JSON, a line break in the cached JSON included."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_core import from_json, to_json

from judge.grading.grader import fingerprint_for
from judge.grading.service import cache_hit_fields
from judge.judges.embedded import EmbeddedJudge
from judge.models import CalibrationStatus, JudgeFingerprint
from judge.regrade.export import GRADES_FILE, OutputWriter
from judge.rubric_loader import load_rubric
from judge.store.grade_reuse import CachedGrade, GradeReuse, own_fields_pieces, with_own_fields
from tests.judge.store.conftest import make_grade


@pytest.fixture(scope="module")
def fingerprint() -> JudgeFingerprint:
    return fingerprint_for(load_rubric("expbench-v1"), EmbeddedJudge())


def own_fields() -> dict[str, object]:
    return cache_hit_fields({"llm_calls": 2}, submission_id="sub-own", agent="agent-own", run_id="run-own",
                            calibration=CalibrationStatus(calibrated=False))


def test_the_pieces_of_a_reused_grade_join_to_the_grade_a_copy_would_hold(fingerprint: JudgeFingerprint) -> None:
    own = own_fields()
    body = make_grade(fingerprint).model_dump_json().encode()
    pieces = own_fields_pieces(body, own)
    assert len(pieces) == 4 and isinstance(pieces[1], memoryview) and pieces[1].obj is body  # the verdicts: a view
    assert b"".join(pieces) == with_own_fields(body, own) == to_json({**from_json(body), **own})
    reordered = to_json(dict(reversed(list(from_json(body).items()))))  # a layout that is not cut: parsed whole
    assert own_fields_pieces(reordered, own) == (with_own_fields(reordered, own),)


def test_a_reuse_is_written_from_its_pieces_as_the_same_line_as_its_joined_json(
    fingerprint: JudgeFingerprint, tmp_path: Path
) -> None:
    own = own_fields()
    compact = make_grade(fingerprint).model_dump_json().encode()
    # A cached grade stored with line breaks (pretty-printed): its line is the joined JSON with them made spaces.
    pretty = compact.replace(b',"task_id"', b',\n"task_id"', 1).replace(b',"leaves"', b',\n"leaves"', 1)
    assert from_json(pretty) == from_json(compact)
    lines = {}
    for name, body in (("compact", compact), ("pretty", pretty)):
        cached = CachedGrade("s" * 64, "t" * 64, body, make_grade(fingerprint).created_at, {})
        reuse = GradeReuse("key", own_fields_pieces(body, own), own, cached)
        assert reuse.text == b"".join(reuse.pieces) == with_own_fields(body, own)
        whole = GradeReuse("key", reuse.text, own, cached)  # given whole: one piece
        assert whole.pieces == (reuse.text,) and whole.text == reuse.text
        for way, written in (("pieces", reuse.pieces), ("joined", reuse.text)):
            out = tmp_path / f"{name}-{way}"
            writer = OutputWriter(out)
            writer.grade(written)
            writer.close()
            lines[name, way] = (out / GRADES_FILE).read_bytes()
        assert lines[name, "pieces"] == lines[name, "joined"]
        assert lines[name, "pieces"].count(b"\n") == 1 and lines[name, "pieces"].endswith(b"\n")
        assert from_json(lines[name, "pieces"]) == {**from_json(compact), **own}
    assert lines["pretty", "pieces"] != lines["compact", "pieces"]  # the line breaks were there, made spaces
