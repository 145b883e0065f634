"""Load versioned YAML rubrics (failing fast, naming file and key) and expand them over a task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from judge.checks.base import bind_args
from judge.checks.registry import CHECKS
from judge.errors import RubricError, UnknownRubricError
from judge.models import Leaf, LeafTemplate, Rubric, Task
from judge.settings import get_settings
from judge.text.items import split_claims

# Keyed by the file's identity and version (device, inode, mtime): one stat per load, no path resolution; the
# same file named two ways (an id, a path, a symlink) shares its entry, an edited or replaced file is parsed anew.
_cache: dict[tuple[int, int, int], Rubric] = {}


def rubric_path(ref: str, rubrics_dir: Path | None = None) -> Path:
    """The file a rubric reference names: a path to a YAML file, or an id in the rubrics folder."""
    candidate = Path(ref)
    if candidate.suffix in {".yaml", ".yml"}:
        if not candidate.is_file():
            raise UnknownRubricError("rubric file not found", field=str(candidate))
        return candidate
    folder = rubrics_dir or get_settings().rubrics_dir
    for suffix in (".yaml", ".yml"):
        path = folder / f"{ref}{suffix}"
        if path.is_file():
            return path
    if candidate.is_file():  # a path, not an id
        raise UnknownRubricError("a rubric file is YAML named *.yaml or *.yml", field=str(candidate))
    known = ", ".join(sorted(p.stem for p in folder.glob("*.y*ml"))) or "none"
    raise UnknownRubricError(f"unknown rubric {ref!r} (known: {known})", field="rubric")


def parse_rubric(data: Any, source: str) -> Rubric:
    """Validate rubric data; RubricError names `source` and the offending key path.

    Every leaf's check must be a registered check, and its arguments must validate against that
    check's arguments model: a misspelled check name or argument fails here, naming the file, the
    leaf template and the key, instead of leaving leaves unscored or a threshold at its default.
    """
    if not isinstance(data, dict):
        raise RubricError("a rubric file holds a mapping at the top level", field=source)
    try:
        rubric = Rubric.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(p) for p in error["loc"])
        raise RubricError(error["msg"], field=f"{source}: {key}" if key else source) from None
    validate_checks(rubric, source)
    return rubric


def validate_checks(rubric: Rubric, source: str) -> None:
    """Each leaf template's check exists and takes the arguments given; the parsed arguments are kept on the
    template's check spec, which every leaf it expands to shares (checks never parse them again).

    Raises:
        RubricError: field `<source>: stages[i].leaves[j] (<template id>).check...`.
    """
    for i, stage in enumerate(rubric.stages):
        for j, template in enumerate(stage.leaves):
            where = f"{source}: stages[{i}].leaves[{j}] ({template.id})"
            check = CHECKS.get(template.check.name, where=f"{where}.check.name")
            bind_args(check, template.check, where)


def load_rubric(ref: str, rubrics_dir: Path | None = None) -> Rubric:
    """Load and validate a rubric by id (e.g. "expbench-v1") or path; cached per file version."""
    path = rubric_path(ref, rubrics_dir)
    stat = path.stat()
    key = (stat.st_dev, stat.st_ino, stat.st_mtime_ns)
    if key in _cache:
        return _cache[key]
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise RubricError("not UTF-8 text", field=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise RubricError(f"invalid YAML: {getattr(exc, 'problem', exc)}", field=where) from None
    rubric = parse_rubric(data, str(path))
    _cache[key] = rubric
    return rubric


def list_rubrics(rubrics_dir: Path | None = None) -> list[Rubric]:
    """Every valid rubric in the rubrics folder, sorted by id (an invalid file raises)."""
    folder = rubrics_dir or get_settings().rubrics_dir
    return sorted((load_rubric(str(p)) for p in folder.glob("*.y*ml")), key=lambda r: (r.id, r.version))


def _items(template: LeafTemplate, task: Task) -> list[tuple[str, dict[str, Any]]] | None:
    """(target text, meta) per ground-truth item the template ranges over; None = no ground truth."""
    if template.expands == "single":
        return [("", {})]
    if template.expands == "design_variable":
        # None and [] alike: no design ground truth, one unscored placeholder that says so.
        variables = task.design_variables or []
        return [(v.as_text(), {"name": v.name, "role": v.role, "values": v.values}) for v in variables] or None
    if template.expands == "requirement":
        derived = bool(task.metadata.get("requirements_from_method"))
        return [(r, {"derived_from_method": derived}) for r in task.requirements] or None
    claims = split_claims(task.expected_outcome)
    return [(c, {}) for c in claims] or None


def expand_rubric(rubric: Rubric, task: Task) -> list[Leaf]:
    """The concrete leaves of `rubric` for `task`: one per ground-truth item per template.

    A template with no ground truth to range over (e.g. a task without design ground truth)
    yields one placeholder leaf marked `no_ground_truth`, graded `unscored`, never failed. A task with a
    `requirement_stage` expands its requirements only in that stage's requirement templates.
    """
    leaves: list[Leaf] = []
    for stage in rubric.stages:
        for template in stage.leaves:
            if template.expands == "requirement" and task.requirement_stage not in (None, stage.stage):
                continue  # the task's requirements belong to another stage (no placeholder: nothing is missing)
            items = _items(template, task)
            common = {
                "template_id": template.id, "stage": stage.stage, "title": template.title,
                "criterion": template.criterion, "kind": template.kind, "levels": template.levels,
                "evidence": template.evidence, "check": template.check,
                "error_category": template.error_category,
            }
            if items is None:
                leaves.append(Leaf(id=f"{template.id}.none", weight=template.weight,
                                   target_meta={"no_ground_truth": True}, **common))
                continue
            for index, (target, meta) in enumerate(items):
                leaf_id = template.id if template.expands == "single" else f"{template.id}.{index}"
                leaves.append(Leaf(id=leaf_id, weight=template.weight, target=target,
                                   target_meta=meta, **common))
    return leaves
