"""Benchmark: the implementation stage against the papers' own code and its gold citations (issue 14).

Data: ../shared/data/expbench/gt_code/<paper>/<task>/ (gt.diff: the paper's own implementation as an all-added
diff; gold.jsonl: where each requirement is implemented; see its SOURCE.md). Every task is graded with the
embedded judge under the default rubric (`--rubric` for another), through `Grader(...).grade` only, with
submissions that carry only a diff
(design and conclusion missing just gate those stages). A requirement's citation counts when gold.jsonl marks
it `valid` and one of its valid spans lies inside the diff (the file is in the diff, the lines exist).

Prints, per paper and overall, beside its target:
  (a) own code: share of requirement leaves with a counted citation that pass (and pass or partial);
  (b) drop-one: per task, the first requirement with a counted citation loses its cited lines (the file is
      rebuilt as a valid all-added diff without them); share of tasks where that leaf then fails (and is not
      pass), and share of the other requirement leaves whose verdict changed (all others, and those whose
      own cited lines were not removed);
  (c) restatement: a diff of one new file holding `# TODO: <requirement>` per requirement, and one holding a
      stub function per requirement whose docstring is the requirement: share of leaves that pass or are
      partial (target 0), share of grades and of leaves flagged (any leaf flag, any grade integrity flag,
      or a warning that speaks of copied / restated ground truth);
  (d) hit@1 / hit@k: share of leaves with a counted citation whose first / any evidence quote's lines (file
      and line range parsed from EvidenceQuote.location, else found by the quote's text) overlap the cited
      lines; a leaf with no quote is a miss (also printed: among leaves with a quote);
  (e) seconds per task: the grade of the paper's own code, and all four grades of the task.
A preview line shows what judge.safety.leak_detection (not yet wired into grading) finds in the (c)
submissions and in the papers' own code.

Reproduce:  .venv/bin/python bench/judging/evidence_gold.py [--papers 93022,97431] [--tasks-per-paper N]
            [--json out/evidence_gold.json] [--compare out/evidence_gold-before.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judge.settings import DEFAULT_RUBRIC, configure_offline_environment

configure_offline_environment()

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())
from paper_runs import run_cases  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from judge.embeddings.encoder import default_embedder  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.loaders.expbench import load_expbench_tasks  # noqa: E402
from judge.models import Grade, LeafResult, Submission, Task  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402
from judge.safety.leak_detection import LeakDetector, copied_share_by_item  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "expbench"
GT_CODE = DATA / "gt_code"
# A warning that says the submission restates or copies ground truth counts as a flag in (c).
COPY_WARNING = re.compile(r"cop(?:y|ied)|restat|verbatim|comment[ -]only|leak|ground[ -]truth text", re.I)
HUNK_LOCATION = re.compile(r"^(?P<file>\S.*?)\s+@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,(?P<count>\d+))? @@")
LINE_LOCATION = re.compile(r"^(?P<file>[^\s:]+):(?P<start>\d+)(?:\s*-\s*(?P<end>\d+))?")
LINES_WORD = re.compile(r"^(?P<file>\S+).*?\blines?\s+(?P<start>\d+)(?:\s*-\s*(?P<end>\d+))?", re.I)

# (figure key, label, target text, test of the target); the targets are issue 14's.
TARGETS: list[tuple[str, str, str, Any]] = [
    ("a_pass", "(a) own code: leaves pass", ">= 0.95", lambda v: v >= 0.95),
    ("a_pass_or_partial", "(a) own code: pass or partial", "", None),
    ("b_fail", "(b) drop-one: dropped leaf fails", ">= 0.90", lambda v: v >= 0.9),
    ("b_not_pass", "(b) drop-one: dropped leaf not pass", ">= 0.90", lambda v: v >= 0.9),
    ("b_exact", "(b) drop-one: fails and no other leaf changed", "", None),
    ("b_fail_after_pass", "(b) ... fails, among leaves that passed before", "", None),
    ("b_others_changed", "(b) drop-one: other leaves changed", "<= 0.05", lambda v: v <= 0.05),
    ("b_others_kept_changed", "(b) ... others whose cited lines stayed", "<= 0.05", lambda v: v <= 0.05),
    ("c_todo_pass_or_partial", "(c) '# TODO: <req>' file: pass or partial", "0", lambda v: v == 0),
    ("c_doc_pass_or_partial", "(c) docstring stubs: pass or partial", "0", lambda v: v == 0),
    ("c_grades_flagged", "(c) restatement grades flagged", "1.00", lambda v: v >= 1.0),
    ("c_leaves_flagged", "(c) restatement leaves flagged", "1.00", lambda v: v >= 1.0),
    ("own_code_grades_flagged", "own-code grades flagged (false flags)", "0", lambda v: v == 0),
    ("c_leak_grades", "(c) preview, leak detector: submissions found", "1.00", lambda v: v >= 1.0),
    ("c_leak_leaves", "(c) preview, leak detector: requirements found", "", None),
    ("own_leak_findings", "    preview, leak detector: own code found", "0", lambda v: v == 0),
    ("d_hit1", "(d) hit@1", ">= 0.80", lambda v: v >= 0.8),
    ("d_hitk", "(d) hit@k", ">= 0.95", lambda v: v >= 0.95),
    ("d_hit1_quoted", "(d) hit@1 among leaves with a quote", "", None),
    ("e_seconds_own", "(e) seconds per task (own-code grade)", "", None),
    ("e_seconds_all", "(e) seconds per task (all 4 grades)", "", None),
]
# figure -> (numerator counter, denominator counter)
RATIOS: dict[str, tuple[str, str]] = {
    "a_pass": ("a_pass", "a_n"), "a_pass_or_partial": ("a_pass_or_partial", "a_n"),
    "b_fail": ("b_fail", "b_n"), "b_not_pass": ("b_not_pass", "b_n"), "b_exact": ("b_exact", "b_n"),
    "b_fail_after_pass": ("b_fail_after_pass", "b_passed_before"),
    "b_others_changed": ("b_others_changed", "b_others_n"),
    "b_others_kept_changed": ("b_others_kept_changed", "b_others_kept_n"),
    "c_todo_pass_or_partial": ("c_todo_pass_or_partial", "c_leaves_n"),
    "c_todo_pass": ("c_todo_pass", "c_leaves_n"),
    "c_doc_pass_or_partial": ("c_doc_pass_or_partial", "c_leaves_n"), "c_doc_pass": ("c_doc_pass", "c_leaves_n"),
    "c_grades_flagged": ("c_grades_flagged", "c_grades_n"), "c_leaves_flagged": ("c_leaves_flagged", "c_leaves2_n"),
    "own_code_grades_flagged": ("own_code_grades_flagged", "tasks"),
    "c_leak_grades": ("c_leak_grades", "c_grades_n"), "c_leak_leaves": ("c_leak_leaves", "c_leaves2_n"),
    "own_leak_findings": ("own_leak_findings", "tasks"),
    "d_hit1": ("d_hit1", "a_n"), "d_hitk": ("d_hitk", "a_n"), "d_hit1_quoted": ("d_hit1", "d_quoted"),
    "d_hit1_contains": ("d_hit1_contains", "a_n"),
    "e_seconds_own": ("e_seconds_own", "tasks"), "e_seconds_all": ("e_seconds_all", "tasks"),
}


@dataclass(frozen=True)
class Span:
    """Lines [start, end] (1-based, inclusive) of one file of the diff."""

    file: str
    start: int
    end: int

    def overlaps(self, other: Span) -> bool:
        return same_file(self.file, other.file) and self.start <= other.end and other.start <= self.end

    def within(self, other: Span) -> bool:
        return same_file(self.file, other.file) and other.start <= self.start and self.end <= other.end


@dataclass
class FileBlock:
    """One file entry of an all-added diff: its header lines, the new file's lines, and its raw text."""

    path: str
    header: list[str]
    lines: list[str]
    raw: str


@dataclass
class GoldCase:
    """One gt_code task: the task, the paper's diff, and the counted citations per requirement index."""

    paper: str
    task: Task
    diff: str
    blocks: list[FileBlock]
    cited: dict[int, list[Span]] = field(default_factory=dict)


def same_file(a: str, b: str) -> bool:
    """Equal paths, or one a path-component suffix of the other (a location may shorten the path)."""
    pa, pb = a.strip("/").split("/"), b.strip("/").split("/")
    n = min(len(pa), len(pb))
    return n > 0 and pa[-n:] == pb[-n:]


def parse_added_diff(diff: str) -> list[FileBlock]:
    """File entries of an all-added diff with each new file's lines (hunks placed at their +start)."""
    blocks: list[FileBlock] = []
    chunks = re.split(r"(?m)^(?=diff --git )", diff)
    for chunk in (c for c in chunks if c.strip()):
        lines = chunk.split("\n")
        header_end = next((i for i, x in enumerate(lines) if x.startswith("@@")), len(lines))
        header = lines[:header_end]
        path = next((x[6:] if x.startswith("+++ b/") else x[4:] for x in header if x.startswith("+++ ")), "")
        content: list[str] = []
        for line in lines[header_end:]:
            match = re.match(r"^@@ -\d+(?:,\d+)? \+(\d+)", line)
            if match:
                content += [""] * max(0, int(match.group(1)) - 1 - len(content))
            elif line.startswith("+"):
                content.append(line[1:])
        blocks.append(FileBlock(path=path, header=header, lines=content, raw=chunk))
    return blocks


def render_without(blocks: list[FileBlock], drop: list[Span]) -> str:
    """The diff with the dropped lines removed from their files (hunk counts rebuilt; emptied files left out)."""
    parts = []
    for block in blocks:
        gone = {n for s in drop if s.file == block.path for n in range(s.start, s.end + 1)}
        if not gone:
            parts.append(block.raw if block.raw.endswith("\n") else block.raw + "\n")
            continue
        kept = [line for n, line in enumerate(block.lines, start=1) if n not in gone]
        if kept:
            body = [f"@@ -0,0 +1,{len(kept)} @@", *(f"+{x}" for x in kept)]
            parts.append("\n".join([*block.header, *body]) + "\n")
    return "".join(parts)


def load_cases(papers: list[str] | None, per_paper: int | None) -> list[GoldCase]:
    """Every gt_code task (of `papers`, at most `per_paper` each), with its counted citations."""
    tasks: dict[str, Task] = {}
    for path in sorted((DATA / "tasks").glob("*/*_complete_final.json")):
        if (GT_CODE / path.name.split("_", 1)[0]).is_dir():
            tasks.update({t.task_id: t for t in load_expbench_tasks(path)})
    cases = []
    for paper_dir in sorted(p for p in GT_CODE.iterdir() if p.is_dir()):
        if papers and paper_dir.name not in papers:
            continue
        task_dirs = sorted((d for d in paper_dir.iterdir() if (d / "gt.diff").is_file()), key=lambda d: int(d.name))
        for task_dir in task_dirs[:per_paper]:
            diff = (task_dir / "gt.diff").read_text(encoding="utf-8")
            blocks = parse_added_diff(diff)
            sizes = {b.path: len(b.lines) for b in blocks}
            case = GoldCase(paper=paper_dir.name, task=tasks[f"{paper_dir.name}:{task_dir.name}"], diff=diff,
                            blocks=blocks)
            for row in map(json.loads, (task_dir / "gold.jsonl").read_text(encoding="utf-8").splitlines()):
                spans = [Span(s["file"], int(s["line_start"]), int(s["line_end"])) for s in row["spans"]
                         if s.get("valid") and s.get("file") in sizes and 1 <= s["line_start"] <= s["line_end"]
                         <= sizes[s["file"]]]
                if row.get("valid") and spans:
                    case.cited[int(row["requirement_index"])] = spans
            cases.append(case)
    return cases


def requirement_leaves(grade: Grade) -> dict[int, LeafResult]:
    """Implementation leaves by the index of the requirement they were expanded from ("<template>.<i>")."""
    out = {}
    for leaf in grade.leaves:
        index = leaf.leaf_id.rsplit(".", 1)[-1]
        if leaf.stage == "implementation" and index.isdigit():
            out[int(index)] = leaf
    return out


def quote_span(location: str | None, text: str, blocks: list[FileBlock]) -> Span | None:
    """The file and lines an evidence quote points at: from its location, else by finding its text."""
    loc = (location or "").strip()
    for pattern in (HUNK_LOCATION, LINE_LOCATION, LINES_WORD):
        match = pattern.match(loc)
        if match:
            start = int(match.group("start"))
            groups = match.groupdict()
            if groups.get("count") is not None:
                end = start + max(1, int(groups["count"])) - 1
            else:
                end = int(groups["end"]) if groups.get("end") else start
            return Span(match.group("file"), start, end)
    wanted = [re.sub(r"^[+ ]", "", x).strip() for x in text.splitlines()]
    wanted = [x for x in wanted if x and not x.startswith("@@")]
    named = loc.split()[0] if loc else ""
    for block in sorted(blocks, key=lambda b: not (named and same_file(named, b.path))):
        stripped = [x.strip() for x in block.lines]
        for n, line in enumerate(stripped):
            if wanted and line == wanted[0] and stripped[n : n + len(wanted)] == wanted:
                return Span(block.path, n + 1, n + len(wanted))
    return None


def grade_flags(grade: Grade) -> list[str]:
    """What flags a grade in (c): its integrity flags, requirement-leaf flags, warnings about copied text."""
    leaf_flags = {f"{leaf.leaf_id}:{flag}" for leaf in requirement_leaves(grade).values() for flag in leaf.flags}
    return [*grade.integrity_flags, *sorted(leaf_flags), *(w for w in grade.warnings if COPY_WARNING.search(w))]


def flagged_grade(grade: Grade) -> bool:
    return bool(grade_flags(grade))


def restatement_diff(path: str, requirements: list[str], docstring: bool) -> str:
    """One new file restating every requirement: `# TODO:` lines, or stub functions with it as docstring."""
    lines: list[str] = []
    for i, requirement in enumerate(requirements):
        text = " ".join(requirement.split())
        if docstring:
            lines += [f"def step_{i + 1}():", f'    """{text.replace(chr(34) * 3, "")}"""',
                      "    raise NotImplementedError", ""]
        else:
            lines.append(f"# TODO: {text}")
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{x}\n" for x in lines))


async def measure(case: GoldCase, grader: Grader) -> tuple[dict[str, float], dict[str, Any]]:
    """Counters of one task for (a)-(e), and a per-task record for the JSON."""
    task, c = case.task, defaultdict[str, float](float)
    c["tasks"] = 1

    def submission(kind: str, diff: str) -> Submission:
        return Submission(submission_id=f"evidence-gold:{task.task_id}:{kind}", task_id=task.task_id, diff=diff)

    started = time.perf_counter()
    own = await grader.grade(task, submission("own", case.diff))
    c["e_seconds_own"] = time.perf_counter() - started
    own_leaves = requirement_leaves(own)
    c["own_code_grades_flagged"] = float(flagged_grade(own))
    record: dict[str, Any] = {"paper": case.paper, "own": {i: leaf.verdict for i, leaf in own_leaves.items()},
                              "own_flags": grade_flags(own)}
    for index, spans in case.cited.items():
        leaf = own_leaves.get(index)
        if leaf is None:
            continue
        c["a_n"] += 1
        c["a_pass"] += leaf.verdict == "pass"
        c["a_pass_or_partial"] += leaf.verdict in {"pass", "partial"}
        quoted = [quote_span(q.location, q.text, case.blocks) for q in leaf.evidence if q.source == "diff"]
        c["d_quoted"] += bool(leaf.evidence)
        first = quoted[0] if quoted else None
        c["d_hit1"] += bool(first and any(s.overlaps(first) for s in spans))
        c["d_hit1_contains"] += bool(first and any(s.within(first) for s in spans))
        c["d_hitk"] += any(q and any(s.overlaps(q) for s in spans) for q in quoted)
    pick = min((i for i in case.cited if i in own_leaves), default=None)
    if pick is not None:
        removed = case.cited[pick]
        dropped = requirement_leaves(await grader.grade(task, submission("drop", render_without(case.blocks,
                                                                                               removed))))
        verdict = dropped[pick].verdict
        changed = [i for i, leaf in own_leaves.items() if i != pick and dropped[i].verdict != leaf.verdict]
        kept = [i for i in own_leaves if i != pick and i in case.cited
                and not any(s.overlaps(r) for s in case.cited[i] for r in removed)]
        c["b_n"] = 1
        c["b_fail"] = float(verdict == "fail")
        c["b_not_pass"] = float(verdict != "pass")
        c["b_exact"] = float(verdict == "fail" and not changed)
        c["b_passed_before"] = float(own_leaves[pick].verdict == "pass")
        c["b_fail_after_pass"] = float(own_leaves[pick].verdict == "pass" and verdict == "fail")
        c["b_others_n"], c["b_others_changed"] = len(own_leaves) - 1, len(changed)
        c["b_others_kept_n"], c["b_others_kept_changed"] = len(kept), len(set(kept) & set(changed))
        record["drop"] = {"requirement": pick, "before": own_leaves[pick].verdict, "after": verdict,
                          "others_changed": changed}
    # Preview of the leak detector, not yet wired into grading: what it finds in the same submissions.
    detector = LeakDetector.for_task(task)
    c["own_leak_findings"] = float(bool(detector.scan_diff(case.diff)))
    record["restatement"] = {}
    for kind, diff in (("todo", restatement_diff("TODO.py", task.requirements, docstring=False)),
                       ("doc", restatement_diff("stubs.py", task.requirements, docstring=True))):
        grade = await grader.grade(task, submission(kind, diff))
        leaves = requirement_leaves(grade)
        c["c_leaves_n"] += len(leaves) if kind == "todo" else 0
        c["c_leaves2_n"] += len(leaves)
        c["c_grades_n"] += 1
        c[f"c_{kind}_pass"] += sum(leaf.verdict == "pass" for leaf in leaves.values())
        c[f"c_{kind}_pass_or_partial"] += sum(leaf.verdict in {"pass", "partial"} for leaf in leaves.values())
        c["c_leaves_flagged"] += sum(bool(leaf.flags) or bool(grade.integrity_flags) for leaf in leaves.values())
        c["c_grades_flagged"] += flagged_grade(grade)
        record["restatement"][kind] = {i: leaf.verdict for i, leaf in leaves.items()}
        found = copied_share_by_item(detector.scan_diff(diff))
        c["c_leak_grades"] += bool(found)
        c["c_leak_leaves"] += sum(f"requirement.{i}" in found for i in leaves)
    c["e_seconds_all"] = time.perf_counter() - started
    return dict(c), record


def figures(counters: dict[str, float]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key, (num, den) in RATIOS.items():
        out[key] = round(counters.get(num, 0.0) / counters[den], 4) if counters.get(den) else None
    out.update({k: counters.get(k, 0.0) for k in ("tasks", "a_n", "b_n", "c_leaves_n")})
    return out


def fmt(value: float | None, key: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:.2f}s" if key.startswith("e_") else f"{value:.3f}"


def print_report(console: Console, by_paper: dict[str, dict[str, float | None]],
                 overall: dict[str, float | None]) -> None:
    columns = [("tasks", "tasks"), ("a_n", "cited"), ("a_pass", "a pass"), ("a_pass_or_partial", "a p+p"),
               ("b_fail", "b fail"), ("b_not_pass", "b !pass"), ("b_others_changed", "b oth Δ"),
               ("c_todo_pass_or_partial", "c todo"), ("c_doc_pass_or_partial", "c doc"),
               ("c_grades_flagged", "c flag"), ("d_hit1", "hit@1"), ("d_hitk", "hit@k"),
               ("e_seconds_own", "s/task")]
    table = Table(title="per paper (a: own code, b: drop-one, c: restatement p+p, d: evidence hits)")
    for _, label in columns:
        table.add_column(label, justify="right")
    for paper, figs in [*by_paper.items(), ("overall", overall)]:
        table.add_row(*[paper if key == "tasks" and paper == "overall" else
                        (f"{paper} ({int(figs['tasks'] or 0)})" if key == "tasks" else
                         str(int(figs[key] or 0)) if key == "a_n" else fmt(figs[key], key)) for key, _ in columns])
    console.print(table)
    console.print(f"overall over {int(overall['tasks'] or 0)} tasks, {int(overall['a_n'] or 0)} requirement "
                  f"leaves with a counted citation, {int(overall['c_leaves_n'] or 0)} requirement leaves:")
    for key, label, target, test in TARGETS:
        value = overall.get(key)
        mark = "" if test is None or value is None else (" [green]met[/]" if test(value) else " [red]not met[/]")
        console.print(f"  {label:<48} {fmt(value, key):>8}   target {target or '-':<8}{mark}")


def print_compare(console: Console, old: dict[str, Any], new: dict[str, Any]) -> None:
    if set(old.get("tasks", {})) != set(new["tasks"]):
        console.print(f"[yellow]note: the runs graded different tasks ({len(old.get('tasks', {}))} before, "
                      f"{len(new['tasks'])} now): the deltas compare different sets[/]")
    table = Table(title=f"compared with {old.get('created', '?')} ({old.get('code_version', '?')})")
    for name in ("figure", "old", "new", "delta"):
        table.add_column(name, justify="right" if name != "figure" else "left")
    for key, label, _, _ in TARGETS:
        before, after = old["overall"].get(key), new["overall"].get(key)
        delta = "-" if before is None or after is None else f"{after - before:+.3f}"
        table.add_row(label, fmt(before, key), fmt(after, key), delta)
    console.print(table)
    for paper, figs in new["papers"].items():
        prev = old.get("papers", {}).get(paper)
        if not prev:
            continue
        moved = [f"{k} {prev[k]:.3f}->{figs[k]:.3f}" for k in ("a_pass", "b_fail", "b_others_changed", "d_hit1")
                 if figs.get(k) is not None and prev.get(k) is not None and abs(figs[k] - prev[k]) >= 0.005]
        if moved:
            console.print(f"  {paper}: " + ", ".join(moved))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", default=None, help="comma-separated paper ids (default: every gt_code paper)")
    parser.add_argument("--tasks-per-paper", type=int, default=None, help="first N tasks of each paper")
    parser.add_argument("--json", type=Path, default=None, help="write the figures (and per-task records) here")
    parser.add_argument("--rubric", default=DEFAULT_RUBRIC, help="rubric id (default: the default rubric)")
    parser.add_argument("--compare", type=Path, default=None, help="a JSON of an earlier run: print deltas")
    args = parser.parse_args()
    console = Console(width=None if sys.stdout.isatty() else 140)
    command = " ".join([".venv/bin/python", "bench/judging/evidence_gold.py", *sys.argv[1:]])
    console.print(f"command: {command}")
    cases = load_cases(args.papers.split(",") if args.papers else None, args.tasks_per_paper)
    grader = Grader(load_rubric(args.rubric), EmbeddedJudge())
    started = time.perf_counter()
    default_embedder().encode(["load the model"])
    console.print(f"embedding model loaded in {time.perf_counter() - started:.1f} s (not counted in (e))")
    per_paper, totals, records = run_cases(console, cases, lambda case: measure(case, grader))
    by_paper = {paper: figures(counters) for paper, counters in per_paper.items()}
    overall = figures(totals)
    print_report(console, by_paper, overall)
    result = {"command": command, "created": datetime.now(UTC).isoformat(timespec="seconds"),
              "code_version": grader.fingerprint.code_version, "fingerprint": grader.fingerprint.digest,
              "overall": overall, "papers": by_paper, "tasks": records}
    if args.compare:
        print_compare(console, json.loads(args.compare.read_text(encoding="utf-8")), result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
        console.print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
