"""A repository folder or tar archive read as an all-added diff: .gitignore at every level, binaries and large
files skipped with a warning, the same diff from a folder and from its tar, and a diff the diff parser reads."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from judge.errors import InputError
from judge.repo_snapshot import snapshot_repository
from judge.submission.diff import parse_diff

REPO = Path(__file__).resolve().parents[1] / "calibration" / "fixtures" / "judgeeval_mini" / "toy-mlp" / "run-1" / \
    "submission"


def _repo(tmp_path: Path) -> Path:
    """The fixture repository plus what git would not keep (ignored files, a binary, a large file)."""
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo)
    (repo / "data").mkdir()
    (repo / "data" / "digits.csv").write_text("1,2,3\n")  # ignored by ./.gitignore (data/)
    (repo / "logs" / "run.tmp").write_text("scratch\n")  # ignored by logs/.gitignore (*.tmp)
    (repo / "cache.pyc").write_bytes(b"\x00\x01")  # ignored by ./.gitignore (*.pyc)
    (repo / "weights.bin").write_bytes(b"\x89PK\x00\x00 weights")
    (repo / "huge.txt").write_text("x" * 5000 + "\n")
    (repo / ".git").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return repo


def test_folder_snapshot_honours_gitignore_and_skips_binaries_and_large_files(tmp_path: Path) -> None:
    snapshot = snapshot_repository(_repo(tmp_path), max_file_bytes=4096)
    assert snapshot.files == [".gitignore", "README.md", "logs/.gitignore", "logs/train.log", "model.py",
                              "results/metrics.json", "train.py"]
    assert snapshot.skipped == {"huge.txt": "5001 bytes, over the 4096-byte limit", "weights.bin": "binary"}
    assert len(snapshot.warnings) == 2 and all("skipped" in w for w in snapshot.warnings)
    assert snapshot.ignored == 4  # data/, logs/run.tmp, cache.pyc, .git/
    parsed = parse_diff(snapshot.diff)
    assert sorted(parsed.touched_paths()) == sorted(snapshot.files)
    added = "".join(line[1:] for line in snapshot.diff.splitlines(keepends=True) if line.startswith("+")
                    and not line.startswith("+++"))
    assert (REPO / "model.py").read_text() in added
    assert "digits.csv" not in snapshot.diff and "scratch" not in snapshot.diff


def test_tar_snapshot_equals_the_folder_snapshot(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    archive = tmp_path / "submission.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(repo, arcname="submission")  # one top folder, as `tar czf` makes it
    from_folder = snapshot_repository(repo, max_file_bytes=4096)
    from_tar = snapshot_repository(archive, max_file_bytes=4096)
    assert from_tar.diff == from_folder.diff and from_tar.skipped == from_folder.skipped
    (tmp_path / "broken.tar").write_bytes(b"not a tar at all")
    with pytest.raises(InputError) as bad:
        snapshot_repository(tmp_path / "broken.tar")
    assert bad.value.field == str(tmp_path / "broken.tar")
