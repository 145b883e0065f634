"""`expjudge regrade --paperbench PAPERS_DIR RUNS_DIR...`: a folder of PaperBench runs, each graded whole.

A run is each folder or archive (.tar, .tar.gz, .tgz, .zip) directly inside a RUNS_DIR. Its paper is the
paper folder of PAPERS_DIR whose id its name starts with (PaperBench names run folders `<paper id>_<run id>`;
the longest matching id wins); its submission is the run's `submission` folder or `submission.tar(.gz)/.zip`
when it holds one, else the run itself. Every run is graded through the grading service as `expjudge grade
--paper` grades it (a run graded before with the same judge is a grade-cache hit), and written to OUT:
`<run>.graded.json` (PaperBench's graded tree), `paperbench_runs.csv` (one row per run: paper, leaves, passed
and weighted score per category, replication score, grade ids) and `failures.jsonl` (runs that could not be
read or graded, with why).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from judge.errors import ExpjudgeError, InputError
from judge.grading.paperbench import grade_paperbench
from judge.grading.service import GradingService
from judge.loaders.paperbench import CATEGORIES, PaperBenchRubric, is_paper_folder, load_paper, read_submission
from judge.loaders.paperbench_tree import PaperBenchGrade

_ARCHIVES = (".tar", ".tar.gz", ".tgz", ".zip")


@dataclass
class PaperBenchRun:
    """One run: its name, its paper's id and where its submission lies."""

    name: str
    paper_id: str | None
    submission: Path


@dataclass
class PaperBenchRegrade:
    """What a PaperBench regrade graded, and what it could not."""

    graded: list[tuple[PaperBenchRun, PaperBenchGrade]] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (run, why)
    written: list[Path] = field(default_factory=list)


def load_papers(papers_dir: Path) -> dict[str, PaperBenchRubric]:
    """Every paper folder directly inside `papers_dir` (or `papers_dir` itself), by paper id.

    Raises:
        InputError: no paper folder there.
    """
    folders = [papers_dir] if is_paper_folder(papers_dir) else sorted(
        p for p in papers_dir.iterdir() if is_paper_folder(p)) if papers_dir.is_dir() else []
    if not folders:
        raise InputError("no PaperBench paper folder (one holding rubric.json) in it", field=str(papers_dir))
    papers: dict[str, PaperBenchRubric] = {}
    for folder in folders:
        paper = load_paper(folder)
        papers[paper.paper_id] = paper
        papers.setdefault(folder.name, paper)  # a run may name the folder rather than config.yaml's id
    return papers


def _submission_of(run: Path) -> Path:
    if run.is_dir():
        for name in ("submission", *(f"submission{suffix}" for suffix in _ARCHIVES)):
            if (run / name).exists():
                return run / name
    return run


def find_runs(runs_dirs: list[Path], paper_ids: list[str]) -> list[PaperBenchRun]:
    """The runs directly inside each folder of `runs_dirs`, each with the paper its name starts with.

    Raises:
        InputError: a path is not a folder.
    """
    runs: list[PaperBenchRun] = []
    by_length = sorted(paper_ids, key=len, reverse=True)
    for folder in runs_dirs:
        if not folder.is_dir():
            raise InputError("expected a folder of PaperBench runs", field=str(folder))
        for entry in sorted(folder.iterdir()):
            if entry.name.startswith(".") or not (entry.is_dir() or entry.name.lower().endswith(_ARCHIVES)):
                continue
            stem = entry.name
            for suffix in _ARCHIVES:
                stem = stem.removesuffix(suffix)
            paper = next((p for p in by_length if stem == p or stem.startswith((f"{p}_", f"{p}-", f"{p}."))), None)
            runs.append(PaperBenchRun(name=stem, paper_id=paper, submission=_submission_of(entry)))
    return runs


def _row(run: PaperBenchRun, graded: PaperBenchGrade) -> dict[str, object]:
    row: dict[str, object] = {"run": run.name, "paper": graded.paper_id, "score": round(graded.score, 4)}
    figures = {f.category: f for f in graded.figures}
    row["leaves"] = figures["all"].leaves
    for category in CATEGORIES:
        got = figures.get(category)
        slug = category.lower().replace(" ", "_")
        row[f"{slug}_passed"] = "" if got is None else got.passed
        row[f"{slug}_score"] = "" if got is None else round(got.score, 4)
    row["grade_ids"] = " ".join(f"{c}={g.grade_id}" for c, g in graded.grades.items())
    return row


async def regrade_paperbench(service: GradingService, papers: dict[str, PaperBenchRubric], runs: list[PaperBenchRun],
                             out: Path, *, refresh: bool = False) -> PaperBenchRegrade:
    """Grade every run and write OUT's files (see the module's docstring); a run that fails is recorded."""
    out.mkdir(parents=True, exist_ok=True)
    result = PaperBenchRegrade()
    for run in runs:
        paper = papers.get(run.paper_id or "")
        if paper is None:
            known = ", ".join(sorted(set(papers)))
            result.failures.append((run.name, f"no paper folder whose id starts the run's name (papers: {known})"))
            continue
        try:
            evidence = read_submission(run.submission)
            graded = await grade_paperbench(service, paper, evidence, submission_id=f"paperbench:{run.name}",
                                            run_id=run.name, refresh=refresh)
        except ExpjudgeError as exc:
            result.failures.append((run.name, str(exc)))
            continue
        target = out / f"{run.name}.graded.json"
        target.write_text(json.dumps(graded.tree, indent=2) + "\n", encoding="utf-8")
        result.written.append(target)
        result.graded.append((run, graded))
    rows = [_row(run, graded) for run, graded in result.graded]
    table = out / "paperbench_runs.csv"
    with table.open("w", newline="", encoding="utf-8") as handle:
        columns = list(rows[0]) if rows else ["run", "paper", "score", "leaves"]
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    failures = out / "failures.jsonl"
    failures.write_text("".join(json.dumps({"run": name, "error": why}) + "\n" for name, why in result.failures),
                        encoding="utf-8")
    result.written += [table, failures]
    return result
