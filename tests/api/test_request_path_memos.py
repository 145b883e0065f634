"""What a grade request no longer recomputes stays right: the fingerprint digest memo follows every change of the
fingerprint, and the rubric's file, found once, is found again when its folder changes."""

from __future__ import annotations

import copy
import os
import pickle
import shutil
from pathlib import Path

import pytest

from judge import rubric_loader
from judge.errors import UnknownRubricError
from judge.models import JudgeFingerprint
from judge.models.hashing import content_hash
from judge.rubric_loader import load_rubric
from judge.settings import get_settings


def _fingerprint() -> JudgeFingerprint:
    return JudgeFingerprint(rubric_id="expbench-v1", rubric_version="1", rubric_hash="r" * 64, judge="llm",
                            judge_args={"samples": 1, "tags": ["a"]}, sampling={"temperature": 0},
                            code_version="0.2.0", embedding_model="minilm@abc")


def _fresh(fingerprint: JudgeFingerprint) -> str:
    """The digest computed from scratch, as before the memo."""
    return content_hash(fingerprint.model_dump(mode="json"))[:16]


def test_the_digest_follows_every_change_of_the_fingerprint() -> None:
    fingerprint = _fingerprint()
    first = fingerprint.digest
    assert first == _fresh(fingerprint) == fingerprint.digest
    digests = {first}
    fingerprint.judge = "embedded"  # a field set anew
    digests.add(fingerprint.digest)
    fingerprint.sampling["temperature"] = 0.0  # equal in Python, another JSON text: another digest
    digests.add(fingerprint.digest)
    fingerprint.judge_args["tags"].append("b")  # nested, in place
    digests.add(fingerprint.digest)
    assert fingerprint.digest == _fresh(fingerprint)
    assert len(digests) == 4
    copied = fingerprint.model_copy(update={"model": "gpt"})  # the memo comes along with the copy
    assert copied.digest == _fresh(copied) != fingerprint.digest
    for twin in (copy.deepcopy(fingerprint), pickle.loads(pickle.dumps(fingerprint)),
                 JudgeFingerprint.model_validate_json(fingerprint.model_dump_json())):
        assert twin.digest == fingerprint.digest
        twin.sampling["seed"] = 7
        assert twin.digest == _fresh(twin) != fingerprint.digest


def test_the_memo_is_invisible() -> None:
    fingerprint, other = _fingerprint(), _fingerprint()
    _ = fingerprint.digest
    assert fingerprint == other and other == fingerprint  # equality compares fields only
    assert fingerprint.model_dump() == other.model_dump()
    assert fingerprint.model_dump_json() == other.model_dump_json()
    assert "_digest" not in fingerprint.model_dump_json()


def _settled(folder: Path) -> None:
    """Date the folder's last change a minute back: a folder changed within the last seconds is never remembered
    (a second change in the same clock tick would leave its mtime as it was)."""
    past = os.stat(folder).st_mtime_ns - 60 * 10**9
    os.utime(folder, ns=(past, past))


def test_the_rubric_file_is_found_again_when_its_folder_changes(tmp_path: Path) -> None:
    source = get_settings().rubrics_dir / "expbench-v1.yaml"
    folder = tmp_path / "rubrics"
    folder.mkdir()
    shutil.copy(source, folder / "mine.yml")
    _settled(folder)
    first = load_rubric("mine", folder)
    assert load_rubric("mine", folder) is first  # found once, parsed once
    assert any(key[:2] == ("mine", str(folder)) for key in rubric_loader._located)  # and remembered

    # A .yaml beside it is the one an id names first: found as soon as it is there.
    text = source.read_text(encoding="utf-8").replace("id: expbench-v1", "id: mine-yaml", 1)
    assert "mine-yaml" in text
    (folder / "mine.yaml").write_text(text, encoding="utf-8")
    assert load_rubric("mine", folder).id == "mine-yaml"

    # Gone: the id is unknown again, not answered from memory.
    (folder / "mine.yaml").unlink()
    (folder / "mine.yml").unlink()
    with pytest.raises(UnknownRubricError):
        load_rubric("mine", folder)


def test_a_relative_rubric_path_follows_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = get_settings().rubrics_dir / "expbench-v1.yaml"
    for name, rubric_id in (("a", "rubric-a"), ("b", "rubric-b")):
        (tmp_path / name).mkdir()
        text = source.read_text(encoding="utf-8").replace("id: expbench-v1", f"id: {rubric_id}", 1)
        (tmp_path / name / "r.yaml").write_text(text, encoding="utf-8")
        _settled(tmp_path / name)
    monkeypatch.chdir(tmp_path / "a")
    assert load_rubric("r.yaml").id == "rubric-a"
    monkeypatch.chdir(tmp_path / "b")
    assert os.getcwd() == str(tmp_path / "b")
    assert load_rubric("r.yaml").id == "rubric-b"
