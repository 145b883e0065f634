"""The rubric a grade request names is loaded on every request: parsed once per file version, and an edited or
replaced file is picked up on the next request (the cache is keyed by the file's identity and mtime)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

import judge.rubric_loader
from judge.rubric_loader import load_rubric

RUBRIC = Path(__file__).resolve().parents[2] / "rubrics" / "expbench-v1.yaml"


def _write(path: Path, version: str) -> None:
    data = yaml.safe_load(RUBRIC.read_text(encoding="utf-8"))
    data["version"] = version
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def test_an_unchanged_rubric_file_is_not_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "mine.yaml", "1")
    first = load_rubric("mine", tmp_path)
    parses: list[object] = []
    monkeypatch.setattr(judge.rubric_loader.yaml, "safe_load", lambda text: parses.append(text))
    assert load_rubric("mine", tmp_path) is first
    assert load_rubric(str(tmp_path / "mine.yaml")) is first  # the same file by path: the same entry
    assert parses == []


def test_a_rubric_file_edited_in_place_is_picked_up(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    _write(path, "1")
    stat = path.stat()
    assert load_rubric("mine", tmp_path).version == "1"
    _write(path, "2")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # 1 ms later, however coarse the clock
    assert load_rubric("mine", tmp_path).version == "2"


def test_a_rubric_file_replaced_with_the_same_mtime_is_picked_up(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    _write(path, "1")
    assert load_rubric("mine", tmp_path).version == "1"
    replacement = tmp_path / "mine.yaml.new"
    _write(replacement, "2")
    stat = path.stat()
    os.utime(replacement, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    kept = tmp_path / "mine.yaml.old"
    os.link(path, kept)  # the old file stays alive, so its inode cannot be reused by the replacement
    os.replace(replacement, path)  # an editor's or a checkout's atomic save: another file at the same path
    assert load_rubric("mine", tmp_path).version == "2"
