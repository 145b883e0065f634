"""Submissions where location and naming carry no answer (issue 36), for bench/judging/location_gold.py and the
requirement model's training (training/train_requirement_model.py).

* `moved`: the paper's own code, every file moved to a neutral path (`agent_code/module_N.<ext>`), nothing
  else changed: every cited leaf should still pass.
* `foreign_at_cited`: another paper's code with its files renamed onto this task's paths (the files the
  requirements cite first, largest foreign file first): no leaf should pass.
* `merged`: the paper's own code with all files of one language concatenated into one file (`main.<ext>`):
  every cited leaf should still pass (training only: another location shape).
* `value_changed`: the paper's own code with, in one requirement's cited lines, every number the requirement
  states (`judge.checks.requirement.stated_values`) replaced by another value: that leaf should not pass;
  leaves whose cited lines it did not touch keep their verdict.

Contrasts inside one submission (issue 40, `contrast_variants`; the code edits are in bench/cases/code_renaming.py):

* `half_removed`: own code without the cited lines of every other cited requirement: the removed leaves should
  fail, the kept ones (whose lines the removal did not touch) pass;
* `renamed`: own code with every name it defines renamed to a meaningless token, comments and docstrings
  removed: every cited leaf should still pass;
* `foreign_renamed`: another paper's code at this task's cited paths with its functions, methods and classes
  renamed after this task's requirements: no leaf should pass;
* `emptied`: own code with the Python functions holding the cited lines of every other cited requirement emptied
  (`pass  # Placeholder`, callers kept): the leaves whose cited lines were all emptied should fail, the leaves
  it did not touch pass (bench only: the hollow-code gate, not the learned decision, owns placeholders);
* `emptied_library`: the same functions emptied to placeholders written with library calls (a random number
  returned in place of a result, a constant array, a wait: `code_renaming.LIBRARY_PLACEHOLDERS`), which read as
  work: the same expectations.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())

from code_renaming import LIBRARY_PLACEHOLDERS, PLACEHOLDER, emptied, renamed, renamed_after
from evidence_gold import FileBlock, GoldCase, Span, render_without
from reference_variants import added_diff

from judge.checks.requirement.stated_values import NUMBER_LITERAL, parse_number, same_number, stated_values

VALUE_CHANGES_PER_TASK = 3


def _files(blocks: list[FileBlock]) -> dict[str, str]:
    return {b.path: "\n".join(b.lines) for b in blocks}


def _extension(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[name.rfind("."):] if "." in name else ""


def moved(case: GoldCase) -> tuple[str, dict[str, str]]:
    """The own code at neutral paths, and the old path -> new path map."""
    mapping = {b.path: f"agent_code/module_{i}{_extension(b.path)}" for i, b in enumerate(case.blocks)}
    return added_diff({mapping[p]: text for p, text in _files(case.blocks).items()}), mapping


def merged(case: GoldCase) -> str:
    """The own code with each language's files concatenated into one `main.<ext>` file."""
    out: dict[str, list[str]] = {}
    for block in case.blocks:
        out.setdefault(f"main{_extension(block.path)}", []).extend([*block.lines, ""])
    return added_diff({path: "\n".join(lines) for path, lines in out.items()})


def foreign_at_cited(case: GoldCase, foreign: GoldCase) -> str:
    """`foreign`'s code with its files renamed onto `case`'s paths (cited files first)."""
    return added_diff(_foreign_files(case, foreign))


def _foreign_files(case: GoldCase, foreign: GoldCase) -> dict[str, str]:
    cited_files = list(dict.fromkeys(s.file for spans in case.cited.values() for s in spans))
    targets = cited_files + [b.path for b in case.blocks if b.path not in cited_files]
    sources = sorted(foreign.blocks, key=lambda b: -len(b.lines))
    files: dict[str, str] = {}
    for i, block in enumerate(sources):
        path = targets[i] if i < len(targets) else f"agent_code/extra_{i}{_extension(block.path)}"
        files[path] = "\n".join(block.lines)
    return files


def _changed(number: float, literal: str) -> str:
    """Another value for a stated number, written the way the code wrote the old one."""
    if "." in literal or "e" in literal.lower():
        new = number * 10 if 0 < abs(number) < 1 else number * 2 + 1
        return repr(float(new))
    return str(int(number) * 2 + 3 if number else 3)


def value_changes(case: GoldCase, limit: int = VALUE_CHANGES_PER_TASK) -> list[tuple[int, str, list[str]]]:
    """(requirement index, diff, changed stated values) for the first `limit` cited requirements whose
    cited lines hold a number their text states."""
    out: list[tuple[int, str, list[str]]] = []
    requirements = list(case.task.requirements)
    for index in sorted(case.cited):
        if len(out) >= limit or index >= len(requirements):
            break
        # A whole 0 or 1 ("reward == 1") is a switch or an index, not a setting: changing every 1 of the cited
        # lines would change the code, not a stated value.
        values = [v for v in stated_values(requirements[index])
                  if not v.stem and not (all(x in (0.0, 1.0) for x in v.values) and "." not in v.text)]
        spans = case.cited[index]
        blocks = {b.path: list(b.lines) for b in case.blocks}
        changed: list[str] = []
        for value in values:
            hit = False
            for span in spans:
                lines = blocks[span.file]
                for n in range(span.start - 1, span.end):
                    line = lines[n]
                    new_line = _replace_number(line, value.values)
                    if new_line != line:
                        lines[n], hit = new_line, True
            if hit:
                changed.append(value.text)
        if changed:
            out.append((index, added_diff({p: "\n".join(lines) for p, lines in blocks.items()}), changed))
    return out


def _replace_number(line: str, values: tuple[float, ...]) -> str:
    def swap(match: re.Match[str]) -> str:
        number = parse_number(match.group(1))
        if number is None or not any(same_number(number, v) for v in values):
            return match.group(0)
        return _changed(number, match.group(1)) + (match.group(2) or "")
    if line.lstrip().startswith("#"):
        return line
    return NUMBER_LITERAL.sub(swap, line)


def touched_by(case: GoldCase, index: int) -> set[int]:
    """The other cited requirements whose cited lines overlap requirement `index`'s."""
    return {other for other in case.cited if other != index
            and any(s.overlaps(r) for s in case.cited[other] for r in case.cited[index])}


def location_variants(case: GoldCase, cases: list[GoldCase], foreign: GoldCase | None,
                      *, merged_too: bool = False) -> list[Any]:
    """The variants of this module as `reference_cases.Variant`s (expected verdicts per cited leaf)."""
    from reference_cases import Variant  # reference_cases imports this module

    cited = sorted(case.cited)
    out = [Variant("moved", moved(case)[0], dict.fromkeys(cited, "pass"))]
    if merged_too:
        out.append(Variant("merged", merged(case), dict.fromkeys(cited, "pass")))
    if foreign is not None:
        out.append(Variant("foreign_at_cited", foreign_at_cited(case, foreign), dict.fromkeys(cited, "fail")))
    for index, diff, _ in value_changes(case):
        touched = touched_by(case, index)
        expected: dict[int, str | None] = {o: (None if o in touched else "pass") for o in cited}
        expected[index] = "fail"
        out.append(Variant("value_changed", diff, expected, dropped=index))
    return out


def removed_half(case: GoldCase) -> tuple[list[int], list[int], set[int]]:
    """(removed, kept, touched): every other cited requirement (from the second) is removed; kept requirements
    whose cited lines overlap a removed one's are `touched` (no target)."""
    cited = sorted(case.cited)
    removed, kept = cited[1::2], cited[0::2]
    touched = {k for k in kept if any(s.overlaps(r) for s in case.cited[k] for i in removed for r in case.cited[i])}
    return removed, kept, touched


def half_removed(case: GoldCase) -> Any:
    """Own code without the cited lines of half of the cited requirements (`removed_half`), as a Variant."""
    from reference_cases import Variant, held_elsewhere

    removed, kept, touched = removed_half(case)
    diff = render_without(case.blocks, [s for i in removed for s in case.cited[i]])
    expected: dict[int, str | None] = {i: None if held_elsewhere(case, i, diff) else "fail" for i in removed}
    expected.update({k: None if k in touched else "pass" for k in kept})
    return Variant("half_removed", diff, expected)


def renamed_own(case: GoldCase) -> Any:
    """Own code with its names made meaningless and comments removed: every cited leaf passes."""
    from reference_cases import Variant

    return Variant("renamed", added_diff(renamed(_files(case.blocks))), dict.fromkeys(sorted(case.cited), "pass"))


def foreign_renamed(case: GoldCase, foreign: GoldCase) -> Any:
    """Another paper's code at the cited paths, its definitions renamed after this task's requirements."""
    from reference_cases import Variant

    files = renamed_after(_foreign_files(case, foreign), list(case.task.requirements))
    return Variant("foreign_renamed", added_diff(files), dict.fromkeys(sorted(case.cited), "fail"))


def emptied_helpers(case: GoldCase, *, library: bool = False) -> Any | None:
    """Own code with the functions holding half of the requirements' cited lines emptied (None when none of
    those lines lies in a function): emptied leaves fail, untouched ones pass, the rest have no target.
    `library`: emptied to placeholders written with library calls (`emptied_library`), not to `pass`."""
    from reference_cases import Variant, held_elsewhere

    removed, _, _ = removed_half(case)
    wanted: dict[str, set[int]] = {}
    for i in removed:
        for s in case.cited[i]:
            wanted.setdefault(s.file, set()).update(range(s.start, s.end + 1))
    files, gone = emptied(_files(case.blocks), wanted, LIBRARY_PLACEHOLDERS if library else (PLACEHOLDER,))
    if not any(gone.values()):
        return None
    diff = added_diff(files)
    expected: dict[int, str | None] = {}
    for i in sorted(case.cited):
        lines = [(s.file, n) for s in case.cited[i] for n in range(s.start, s.end + 1)]
        hit = sum(n in gone.get(f, set()) for f, n in lines)
        emptied_here = hit == len(lines) and not held_elsewhere(case, i, diff)
        expected[i] = "fail" if emptied_here else "pass" if hit == 0 else None
    return Variant("emptied_library" if library else "emptied", diff, expected)


def contrast_variants(case: GoldCase, foreign: GoldCase | None, *, emptied_too: bool = False) -> list[Any]:
    """The contrasts inside one submission of this module (see the module docstring), as Variants."""
    out = [half_removed(case), renamed_own(case)]
    if foreign is not None:
        out.append(foreign_renamed(case, foreign))
    if emptied_too:
        found = emptied_helpers(case)
        out += [found] if found is not None else []
    return out


__all__ = ["Span", "contrast_variants", "emptied_helpers", "foreign_at_cited", "foreign_renamed", "half_removed",
           "location_variants", "merged", "moved", "renamed_own", "value_changes"]
