"""Benchmark: code units and two-stage retrieval against the papers' own code and its gold citations.

Data: ../shared/data/expbench/gt_code/<paper>/<task>/ (gt.diff, gold.jsonl; see its SOURCE.md) and the tasks'
requirements from ../shared/data/expbench/tasks. Requirements are used with their citations removed (the
"(/workspace/x.py:12-30)" the benchmark appends), so the file name is not handed to retrieval. A gold citation
counts when gold.jsonl marks it valid and one of its valid spans names a file of the diff.

Prints, over all tasks: share of counted citations whose file is the top-1 / within the top-3 files; whose
lines overlap the top-1 unit / any of the top-5 units; share of gold spans whose non-blank lines all lie in
units (and inside a single unit); files reached; seconds per task (units + retrieval; embedding when --embed).

Run: .venv/bin/python bench/judging/code_retrieval_gold.py [--embed] [--no-prose] [--top-files 3] [--max-unit-lines 60]
     [--papers 93022,97431]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import time
from pathlib import Path
from typing import Any

from judge.submission.code_segments import SegmentLimits
from judge.submission.code_units import CodeUnit, post_images, units_from_diff
from judge.submission.diff import parse_diff
from judge.submission.distinguishing import (
    check_distinguishing,
    distinguishing_terms,
    evidence_terms,
    missing_names,
    name_terms,
)
from judge.submission.retrieval import RetrievalConfig, retrieve

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "expbench"
_MANY_FILES = 3
_CITATION = re.compile(r"\s*\((?=[^()]*(?:/workspace/|\.\w+:\s*\d))[^()]*\)")


def strip_citations(requirement: str) -> str:
    """The requirement without the benchmark's "(/workspace/file.py:1-2)" citations."""
    return _CITATION.sub("", requirement).strip()


def task_requirements(paper: str, task: int) -> list[str]:
    """The task's requirements as the benchmark lists them, citations removed."""
    for path in (DATA / "tasks").glob(f"*/{paper}_complete_final.json"):
        question = json.loads(path.read_text())["questions"][task]
        return [strip_citations(str(r)) for r in question.get("requirements") or []]
    return []


def gold_spans(record: dict[str, Any], paths: set[str]) -> list[tuple[str, int, int]]:
    """The valid spans of a gold record that name a file of the diff."""
    if not record.get("valid"):
        return []
    return [(s["file"], s["line_start"], s["line_end"]) for s in record["spans"]
            if s.get("valid") and s["file"] in paths]


def _overlaps(unit_path: str, start: int, end: int, spans: list[tuple[str, int, int]]) -> bool:
    return any(path == unit_path and start <= s_end and s_start <= end for path, s_start, s_end in spans)


def _content(path: str, line: str) -> str:
    """The line's text; for a notebook, the source text its JSON line holds (`"\\n",` holds none)."""
    if path.endswith(".ipynb"):
        return line.strip().rstrip(",").strip('"').replace("\\n", "").strip()
    return line.strip()


def cited_code(units: list[CodeUnit], spans: list[tuple[str, int, int]]) -> list[str]:
    """The file paths and the executable text of the cited lines."""
    texts = sorted({path for path, _, _ in spans})
    for unit in units:
        for number, code in zip(unit.line_numbers, unit.executable_lines, strict=True):
            if any(unit.file_path == path and start <= number <= end for path, start, end in spans):
                texts.append(code)
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embed", action="store_true", help="fuse all-MiniLM-L6-v2 similarity into stage (b)")
    parser.add_argument("--no-prose", action="store_true", help="index executable code only")
    parser.add_argument("--top-files", type=int, default=3)
    parser.add_argument("--max-unit-lines", type=int, default=60)
    parser.add_argument("--papers", default="", help="comma-separated paper ids (default: all)")
    args = parser.parse_args()
    config = RetrievalConfig(top_files=args.top_files, include_prose=not args.no_prose)
    limits = SegmentLimits(max_unit_lines=args.max_unit_lines)
    embed = None
    if args.embed:
        from judge.embeddings.encoder import default_embedder

        embed = default_embedder().encode
    counts = {"citations": 0, "file@1": 0, "file@3": 0, "unit@1": 0, "unit@5": 0, "spans": 0,
              "span_in_units": 0, "span_in_one_unit": 0, "files": 0, "files_reached": 0, "with_names": 0,
              "names_all_present": 0, "with_siblings": 0, "distinguishes": 0, "points_to_sibling": 0}
    many = dict.fromkeys(("citations", "file@1", "file@3", "unit@1", "unit@5"), 0)
    chance = {"file@1": 0.0, "unit@5": 0.0}
    seconds: list[float] = []
    tasks = sorted(DATA.glob("gt_code/*/*/gt.diff"), key=lambda p: (p.parent.parent.name, int(p.parent.name)))
    if args.papers:
        tasks = [t for t in tasks if t.parent.parent.name in args.papers.split(",")]
    for diff_path in tasks:
        paper, task = diff_path.parent.parent.name, int(diff_path.parent.name)
        requirements = task_requirements(paper, task)
        started = time.process_time()
        diff = parse_diff(diff_path.read_text())
        units = units_from_diff(diff, limits)
        result = retrieve(requirements, units, embed=embed, config=config)
        seconds.append(time.process_time() - started)
        by_id: dict[str, CodeUnit] = {u.id: u for u in units}
        images = {image.path: image for image in post_images(diff)}
        counts["files"] += result.files_total
        counts["files_reached"] += result.files_reached
        contrasts = distinguishing_terms(requirements)
        for line in (diff_path.parent / "gold.jsonl").read_text().splitlines():
            record = json.loads(line)
            spans = gold_spans(record, set(images))
            if not spans or record["requirement_index"] >= len(result.requirements):
                continue
            found = result.requirements[record["requirement_index"]]
            ranked_files = [f.path for f in found.files if not f.via_coverage]
            gold_files = {path for path, _, _ in spans}
            top = found.top_units(5)
            hits = {"citations": True,
                    "file@1": bool(ranked_files[:1] and ranked_files[0] in gold_files),
                    "file@3": bool(gold_files & set(ranked_files[:3])),
                    "unit@1": bool(top and _overlaps(top[0].file_path, top[0].start_line, top[0].end_line, spans)),
                    "unit@5": any(_overlaps(u.file_path, u.start_line, u.end_line, spans) for u in top)}
            for key, hit in hits.items():
                counts[key] += hit
                if len(images) > _MANY_FILES:
                    many[key] += hit
            gold_units = sum(_overlaps(u.file_path, u.start_line, u.end_line, spans) for u in units)
            chance["file@1"] += 1 / len(images)
            chance["unit@5"] += 1 - math.comb(len(units) - gold_units, 5) / math.comb(len(units), 5) \
                if len(units) >= 5 else 1.0
            evidence = evidence_terms(cited_code(units, spans))
            requirement = requirements[record["requirement_index"]]
            if name_terms(requirement):
                counts["with_names"] += 1
                counts["names_all_present"] += not missing_names(evidence, requirement)
            distinguishing = contrasts[record["requirement_index"]]
            if any(c.own for c in distinguishing.contrasts):
                check = check_distinguishing(evidence, distinguishing)
                counts["with_siblings"] += 1
                counts["distinguishes"] += check.distinguishes
                counts["points_to_sibling"] += bool(check.points_to_siblings)
            for path, start, end in spans:
                image = images[path]
                rows = [r for r in range(start, end + 1) if _content(path, image.lines.get(r, ""))]
                in_file = [u for u in by_id.values() if u.file_path == path]
                counts["spans"] += 1
                counts["span_in_units"] += all(any(r in u.line_numbers or u.start_line <= r <= u.end_line
                                                   for u in in_file) for r in rows)
                counts["span_in_one_unit"] += any(u.start_line <= start and end <= u.end_line for u in in_file)
    n = max(1, counts["citations"])
    print(f"tasks {len(tasks)}, counted gold citations {counts['citations']}, embed={args.embed}, "
          f"prose={not args.no_prose}, top_files={args.top_files}, max_unit_lines={args.max_unit_lines}")
    for key in ("file@1", "file@3", "unit@1", "unit@5"):
        print(f"  {key:8} {counts[key] / n:.3f}  ({counts[key]}/{counts['citations']}); in diffs of more than "
              f"{_MANY_FILES} files {many[key] / max(1, many['citations']):.3f} ({many[key]}/{many['citations']})")
    print(f"  by chance: file@1 {chance['file@1'] / n:.3f}, unit@5 {chance['unit@5'] / n:.3f}")
    span_count = max(1, counts["spans"])
    print(f"  gold spans in units {counts['span_in_units'] / span_count:.3f}, inside one unit "
          f"{counts['span_in_one_unit'] / span_count:.3f} ({counts['spans']} spans)")
    print(f"  requirements naming names {counts['with_names']}: cited code holds all "
          f"{counts['names_all_present'] / max(1, counts['with_names']):.3f}")
    print(f"  requirements with near-identical siblings {counts['with_siblings']}: cited code distinguishes "
          f"{counts['distinguishes'] / max(1, counts['with_siblings']):.3f}, points to a sibling "
          f"{counts['points_to_sibling'] / max(1, counts['with_siblings']):.3f}")
    print(f"  files reached {counts['files_reached']}/{counts['files']}")
    print(f"  CPU seconds per task: mean {statistics.mean(seconds):.3f}, max {max(seconds):.3f}")


if __name__ == "__main__":
    main()
