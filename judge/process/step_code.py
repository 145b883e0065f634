"""A step's full code: the baseline overlaid with the step's snapshot, or patched by its diff."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from judge.errors import InputError, MalformedDiffError
from judge.models.submission import TrajectoryStep


def _diff_path(name: str | None) -> str | None:
    if name is None or name == "/dev/null":
        return None
    for prefix in ("a/", "b/"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _same_line(left: str, right: str) -> bool:
    return left.rstrip("\r\n") == right.rstrip("\r\n")


def apply_unified_diff(files: Mapping[str, str], diff: str, *, where: str) -> dict[str, str]:
    """Apply a unified diff to {path: content} exactly (no fuzz); returns the new mapping.

    Args:
        files: The code the diff was made against.
        diff: Unified diff text (git or plain); paths may carry a/ and b/ prefixes.
        where: Names the diff in error messages (e.g. "trajectory step 3").

    Raises:
        MalformedDiffError: The diff does not parse, or a hunk does not match the code.
    """
    try:
        patch = PatchSet(diff)
    except UnidiffParseError as exc:
        raise MalformedDiffError(f"unparsable diff: {exc}", field=where) from exc
    result = dict(files)
    for patched in patch:
        source = _diff_path(patched.source_file)
        target = _diff_path(patched.target_file)
        if target is None:  # deleted file
            if source is not None:
                result.pop(source, None)
            continue
        if source is None:
            lines: list[str] = []
        elif source in result:
            lines = result[source].splitlines(keepends=True)
        else:
            raise MalformedDiffError(f"diff changes {source}, which the baseline does not have", field=where)
        output: list[str] = []
        position = 0
        for hunk in patched:
            start = hunk.source_start - 1 if hunk.source_length > 0 else hunk.source_start
            expected = [line.value for line in hunk if line.is_context or line.is_removed]
            actual = lines[start : start + len(expected)]
            if (
                start < position
                or len(actual) != len(expected)
                or not all(_same_line(a, e) for a, e in zip(actual, expected, strict=True))
            ):
                raise MalformedDiffError(
                    f"hunk @@ -{hunk.source_start},{hunk.source_length} does not apply to {source}",
                    field=where,
                )
            output.extend(lines[position:start])
            output.extend(line.value for line in hunk if line.is_context or line.is_added)
            position = start + len(expected)
        output.extend(lines[position:])
        if source is not None and source != target:
            result.pop(source, None)
        result[target] = "".join(output)
    return result


def step_files(step: TrajectoryStep, baseline: Mapping[str, str]) -> dict[str, str] | None:
    """The full code of a step: {path: content}, or None when the step carries no code.

    `code` holds files in full and overrides the baseline's version of each (files it lacks are the
    baseline's); `diff` is a unified diff against the baseline. A step may carry one or the other.
    """
    where = f"trajectory step {step.step_id}"
    if step.code is not None and step.diff is not None:
        raise InputError("a step carries either a code snapshot or a diff, not both", field=where)
    if step.code is not None:
        return {**baseline, **step.code}
    if step.diff is not None:
        return apply_unified_diff(baseline, step.diff, where=where)
    return None


def document(files: Mapping[str, str]) -> list[str]:
    """The embedded form of some code: file contents in path order (FML-bench's order)."""
    return [files[path] for path in sorted(files)]


def repeated_step_ids(steps: Sequence[TrajectoryStep]) -> dict[int, int]:
    """{step_id: occurrences} of the ids that more than one step carries, in order of first appearance."""
    return {step_id: n for step_id, n in Counter(step.step_id for step in steps).items() if n > 1}
