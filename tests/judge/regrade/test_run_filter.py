"""`--only` parsing and the flipped-runs reading of a previous changes.json (the CLI path is in
test_expbench_out.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.errors import InputError
from judge.regrade.run_filter import flipped_runs, parse_only


def _changes(path: Path) -> Path:
    runs = [
        {"run_id": "a", "baselines": {"curie_b1f623b": {"flips": {"C": [False, True]}}}},
        {"run_id": "b", "baselines": {"curie_b1f623b": {"flips": {}}, "fingerprint:abc": {"flips": {},
                                                                                         "leaf_flips": [{}]}}},
        {"run_id": "c", "baselines": {"curie_6cacefa": {"flips": {}, "judge_failure": "did not parse"}}},
    ]
    path.write_text(json.dumps({"runs": runs}))
    return path


def test_flipped_runs_by_baseline(tmp_path: Path) -> None:
    changes = _changes(tmp_path / "changes.json")
    assert flipped_runs(changes) == {"a", "b"}  # a headline flip, or a leaf flip against a fingerprint
    assert flipped_runs(changes, "curie_*") == {"a"} and flipped_runs(changes, "fingerprint:*") == {"b"}


def test_parse_only_combines_keys_and_refuses_bad_filters(tmp_path: Path) -> None:
    _changes(tmp_path / "changes.json")
    run_filter = parse_only(["paper=930*", "paper=17*", "flipped=curie_*"], tmp_path)
    assert run_filter is not None and run_filter.patterns == {"paper": ["930*", "17*"]}
    assert run_filter.flipped == {"a"} and run_filter.describe() == "paper=930*|17*, flipped (1 runs)"
    assert parse_only([], tmp_path) is None
    for bad, said in (("colour=red", "unknown filter"), ("task=", "needs a value")):
        with pytest.raises(InputError, match=said) as error:
            parse_only([bad], tmp_path)
        assert error.value.field == "--only"
    with pytest.raises(InputError, match=r"needs the changes\.json"):
        parse_only(["flipped"], tmp_path / "elsewhere")
