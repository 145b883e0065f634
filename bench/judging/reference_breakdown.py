"""Why drop-one grades come out as they do (bench/judging/reference_gold.py): where the dropped leaf's evidence lies
when it still passes, and which other leaves changed.

A drop-one submission is the paper's own code without one requirement's cited lines. Its dropped leaf should
fail; when it passes or is partial, `dropped_leaf_counters` says where its first evidence unit lies (mapped
back to the own code's line numbers): inside the leaf's reference span (the rest of the unit that held the
cited lines), elsewhere in the same file, or in another file; how much of the reference span the cited lines
are (a span that is mostly context survives the drop); and whether the cited lines are still in the
submission verbatim elsewhere (the reference holds them twice: the behaviour was not removed).

`other_leaf_counters` splits the other leaves by what the drop did to their code: their cited lines overlap
the dropped lines (their code was deleted too: they should change), their cited lines are intact (they
should not), or they have no counted citation (unknown).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())

from evidence_gold import FileBlock, GoldCase, Span, quote_span, same_file
from rich.console import Console

from judge.models import LeafResult
from judge.reference.sources import parse_citations

# Leaf groups of `other_leaf_counters`, in print order, with what each means.
OTHER_GROUPS = {
    "overlap": "cited lines overlap the dropped lines (their code was deleted too)",
    "intact": "cited lines untouched by the drop (their code is intact)",
    "uncited_overlap": "no counted citation, but the lines they cite (a citation gold.jsonl marks invalid) "
                       "overlap the dropped lines",
    "uncited_span": "no counted citation, the reference span they were judged against (retrieved for their words) "
                    "overlaps the dropped lines",
    "uncited": "no counted citation, nothing they cite or were judged against overlaps the dropped lines",
}
WHERE = {
    "in_span": "first evidence unit inside the leaf's reference span (the rest of its enclosing unit)",
    "same_file": "first evidence unit elsewhere in the file of the span or of the cited lines",
    "other_file": "first evidence unit in another file",
    "none": "no evidence unit quoted",
}


def original_line(blocks: list[FileBlock], removed: list[Span], file: str, line: int) -> int:
    """The own code's line number of line `line` of `file` in the drop-one submission (lines renumbered)."""
    block = next((b for b in blocks if same_file(b.path, file)), None)
    if block is None:
        return line
    gone = {n for s in removed if s.file == block.path for n in range(s.start, s.end + 1)}
    kept = [n for n in range(1, len(block.lines) + 1) if n not in gone]
    return kept[line - 1] if 0 < line <= len(kept) else line


def _cited_share(case: GoldCase, index: int, span: Span) -> float:
    """Share of the non-blank lines of a reference span that the leaf cites."""
    lines = next(b.lines for b in case.blocks if same_file(b.path, span.file))
    rows = [n for n in range(span.start, span.end + 1) if n <= len(lines) and lines[n - 1].strip()]
    cited = [n for n in rows if any(s.file == span.file and s.start <= n <= s.end for s in case.cited[index])]
    return len(cited) / len(rows) if rows else 0.0


def _still_present(case: GoldCase, index: int, diff_blocks: list[FileBlock]) -> float:
    """Share of the dropped cited lines (stripped, non-blank) that the drop-one submission still holds."""
    by_path = {b.path: b.lines for b in case.blocks}
    cited = [x.strip() for s in case.cited[index] for x in by_path[s.file][s.start - 1 : s.end] if x.strip()]
    present = {x.strip() for b in diff_blocks for x in b.lines}
    return sum(x in present for x in cited) / len(cited) if cited else 0.0


def dropped_leaf_counters(mode: str, case: GoldCase, index: int, leaf: LeafResult | None,
                          diff_blocks: list[FileBlock]) -> tuple[dict[str, float], str | None]:
    """Counters (and a one-line note) for a dropped leaf that still passes or is partial; nothing else."""
    if leaf is None or leaf.verdict == "fail":
        return {}, None
    removed = case.cited[index]
    first = next((q for q in leaf.evidence if q.source == "diff"), None)
    found = quote_span(first.location, first.text, diff_blocks) if first else None
    spans = [Span(r.file, r.start_line, r.end_line) for r in leaf.reference]
    where, at = "none", "-"
    if found is not None:
        start = original_line(case.blocks, removed, found.file, found.start)
        end = original_line(case.blocks, removed, found.file, found.end)
        mapped = Span(found.file, start, end)
        at = f"{found.file}:{start}-{end}"
        if any(mapped.overlaps(s) for s in spans):
            where = "in_span"
        elif any(same_file(found.file, s.file) for s in [*spans, *removed]):
            where = "same_file"
        else:
            where = "other_file"
    share = max((_cited_share(case, index, s) for s in spans if any(s.overlaps(r) for r in removed)), default=0.0)
    present = _still_present(case, index, diff_blocks)
    c = {f"{mode}:dropx:n": 1.0, f"{mode}:dropx:{where}": 1.0, f"{mode}:dropx:cited_share": share,
         f"{mode}:dropx:mostly_context": float(share < 0.5), f"{mode}:dropx:still_present": float(present >= 0.5)}
    note = (f"{mode} {case.task.task_id} leaf {index} {leaf.verdict}: evidence {at} ({where}); reference "
            f"{', '.join(r.label for r in leaf.reference) or '-'}; cited share of span {share:.2f}; "
            f"cited lines still in the submission {present:.2f}")
    return c, note


def other_leaf_counters(mode: str, case: GoldCase, dropped: int, leaves: dict[int, LeafResult],
                        own: dict[int, str]) -> tuple[dict[str, float], list[str]]:
    """Per group of `OTHER_GROUPS`: how many other leaves, how many changed, and how (`before>after`); and a
    note per changed leaf (for the JSON record)."""
    removed = case.cited[dropped]
    c: dict[str, float] = {}
    notes: list[str] = []
    for index, leaf in leaves.items():
        verdict = leaf.verdict
        if index == dropped:
            continue
        if index not in case.cited:
            cites = [Span(c.path.lstrip("/"), c.start_line, c.end_line)
                     for c in parse_citations(case.task.requirements[index])]
            judged = [Span(r.file, r.start_line, r.end_line) for r in leaf.reference]
            group = "uncited_overlap" if any(s.overlaps(r) for s in cites for r in removed) else \
                "uncited_span" if any(s.overlaps(r) for s in judged for r in removed) else "uncited"
        elif any(s.overlaps(r) for s in case.cited[index] for r in removed):
            group = "overlap"
        else:
            group = "intact"
        c[f"{mode}:dropo:{group}:n"] = c.get(f"{mode}:dropo:{group}:n", 0.0) + 1
        if verdict != own.get(index):
            key = f"{mode}:dropo:{group}:changed"
            c[key] = c.get(key, 0.0) + 1
            move = f"{mode}:dropo:{group}:{own.get(index)}>{verdict}"
            c[move] = c.get(move, 0.0) + 1
            notes.append(f"{mode} {case.task.task_id} drop {dropped}: leaf {index} ({group}) {own.get(index)}>"
                         f"{verdict}; judged against {', '.join(r.label for r in leaf.reference) or '-'}; "
                         f"evidence {leaf.evidence[0].location if leaf.evidence else '-'}")
    return c, notes


def print_breakdown(console: Console, totals: dict[str, float], records: dict[str, Any]) -> None:
    """The drop-one breakdowns of both modes, and one note per dropped leaf that did not fail."""
    for mode, name in (("ref", "with the reference"), ("noref", "without the reference")):
        n = totals.get(f"{mode}:dropx:n", 0.0)
        console.print(f"drop-one {name}: {int(totals.get(f'{mode}:drop:n', 0))} dropped leaves, "
                      f"{int(n)} still pass or partial")
        if n:
            for key, label in WHERE.items():
                console.print(f"    {int(totals.get(f'{mode}:dropx:{key}', 0)):>3}  {label}")
            if mode == "ref":  # without the reference no span was judged against
                console.print(f"    {int(totals.get(f'{mode}:dropx:mostly_context', 0)):>3}  reference span mostly "
                              f"context (cited lines < half of it; mean share "
                              f"{totals.get(f'{mode}:dropx:cited_share', 0) / n:.2f})")
            console.print(f"    {int(totals.get(f'{mode}:dropx:still_present', 0)):>3}  cited lines still in the "
                          f"submission elsewhere (at least half of them, verbatim)")
        console.print(f"  other leaves of drop-one submissions {name}, by what the drop did to their code:")
        for group, label in OTHER_GROUPS.items():
            count = totals.get(f"{mode}:dropo:{group}:n", 0.0)
            changed = totals.get(f"{mode}:dropo:{group}:changed", 0.0)
            prefix = f"{mode}:dropo:{group}:"
            moves = sorted((k[len(prefix):], v) for k, v in totals.items()
                           if k.startswith(prefix) and ">" in k)
            share = f"{changed / count:.3f}" if count else "-"
            console.print(f"    {label}: {int(changed)}/{int(count)} changed ({share})"
                          + (f"  [{', '.join(f'{m} {int(v)}' for m, v in moves)}]" if moves else ""))
    notes = [note for record in records.values() for note in record.get("drop_notes", [])]
    if notes:
        console.print("dropped leaves that did not fail:")
        for note in notes:
            console.print(f"  {note}")
