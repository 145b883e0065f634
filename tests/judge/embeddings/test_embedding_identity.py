"""The judge fingerprint records which embedding model aligned the evidence, by name and content."""

from __future__ import annotations

import shutil
from pathlib import Path

from judge.embeddings.encoder import Embedder, default_model_path, model_identity
from judge.grading.grader import Grader, fingerprint_for
from judge.judges.embedded import EmbeddedJudge
from judge.rubric_loader import load_rubric


def _linked_copy(source: Path, target: Path) -> Path:
    """The model folder with every file linked, not copied (the weights are 90 MB)."""
    for file in source.rglob("*"):
        if file.is_file():
            dest = target / file.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.symlink_to(file)
    return target


def test_the_fingerprint_names_the_bundled_model_and_changes_with_another(tmp_path: Path) -> None:
    rubric, judge = load_rubric("expbench-v1"), EmbeddedJudge()
    bundled = Grader(rubric, judge).fingerprint
    assert bundled.embedding_model is not None and bundled.embedding_model.startswith("all-MiniLM-L6-v2@")

    # The same files under another folder: same content hash, the folder's name.
    same = _linked_copy(default_model_path(), tmp_path / "same-model")
    assert model_identity(same).split("@")[1] == bundled.embedding_model.split("@")[1]

    # One config value changed: another model as far as verdicts go, so another fingerprint.
    edited = _linked_copy(default_model_path(), tmp_path / "edited-model")
    config = edited / "1_Pooling" / "config.json"
    text = config.read_text()
    config.unlink()
    config.write_text(text.replace("true", "false", 1))
    other = fingerprint_for(rubric, judge, Embedder(edited))
    assert other.embedding_model is not None and other.embedding_model.startswith("edited-model@")
    assert other.embedding_model.split("@")[1] != bundled.embedding_model.split("@")[1]
    assert other.digest != bundled.digest
    shutil.rmtree(edited)
