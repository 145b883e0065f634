"""PaperBench's graded tree from expjudge grades, and its per-category figures.

The tree carries, at every node, the fields of PaperBench's `GradedTaskNode` (what `expected_result.json` and
PaperBench's `GradedTaskNode.from_dict` read): id, requirements, weight, score, valid_score, explanation,
task_category (None on inner nodes), judge_metadata and sub_tasks; finegrained_task_category is kept as the
rubric gives it. A leaf scores 1 for a pass and 0 otherwise; a leaf the judge could not grade (`unscored`)
scores 0 with `valid_score` false, as PaperBench records a judge failure. An inner node's score is PaperBench's
`score_from_children`: the weighted mean of its children's scores (0 when their weights sum to 0), and its
valid_score holds when every child's does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from judge.loaders.paperbench import CATEGORIES, STAGE_OF_CATEGORY, CategoryPart, PaperBenchRubric
from judge.models import Grade


@dataclass(frozen=True)
class LeafOutcome:
    """What one PaperBench leaf was given."""

    score: float
    valid_score: bool
    explanation: str
    verdict: str
    reason_code: str | None = None
    confidence: float | None = None
    grade_id: str | None = None
    leaf_id: str | None = None


@dataclass(frozen=True)
class CategoryFigures:
    """One category's (or the whole tree's, `category` "all") figures."""

    category: str
    leaves: int
    passed: int
    failed: int
    unscored: int
    score: float  # PaperBench's weighted score of the tree cut to this category's leaves (0-1)


def outcomes(parts: list[CategoryPart], grades: dict[str, Grade]) -> dict[int, LeafOutcome]:
    """Each leaf's outcome by its tree index: from its category's grade, or failed for the part's reason.

    Raises:
        ValueError: a category's grade lacks one of its leaves (a grade of another task).
    """
    found: dict[int, LeafOutcome] = {}
    for part in parts:
        if part.missing is not None:
            for leaf in part.leaves:
                found[leaf.index] = LeafOutcome(0.0, True, part.missing, "fail", reason_code="no_reproduction")
            continue
        grade = grades[part.category]
        stage = STAGE_OF_CATEGORY[part.category]
        by_position = {int(r.leaf_id.rsplit(".", 1)[1]): r for r in grade.leaves
                       if r.stage == stage and r.leaf_id.rsplit(".", 1)[-1].isdigit()}
        for position, leaf in enumerate(part.leaves):
            result = by_position.get(position)
            if result is None:
                raise ValueError(f"grade {grade.grade_id} has no {stage} leaf {position} of {part.category}")
            why = result.reason or result.rationale or result.verdict
            found[leaf.index] = LeafOutcome(
                score=1.0 if result.verdict == "pass" else 0.0, valid_score=result.verdict != "unscored",
                explanation=why, verdict=result.verdict, reason_code=result.reason_code,
                confidence=result.confidence, grade_id=grade.grade_id, leaf_id=result.leaf_id)
    return found


def graded_tree(rubric: PaperBenchRubric, found: dict[int, LeafOutcome]) -> dict[str, Any]:
    """The rubric's tree with every node graded (see the module's docstring)."""
    counter = iter(range(len(rubric.leaves)))

    def walk(node: dict[str, Any]) -> dict[str, Any]:
        children = node.get("sub_tasks") or []
        base = {"id": node["id"], "requirements": node["requirements"], "weight": node["weight"]}
        if not children:
            index = next(counter)
            outcome = found[index]
            meta = {k: v for k, v in asdict(outcome).items() if k not in ("score", "valid_score", "explanation")}
            return {**base, "score": outcome.score, "valid_score": outcome.valid_score,
                    "explanation": outcome.explanation, "task_category": rubric.leaves[index].category,
                    "finegrained_task_category": node.get("finegrained_task_category"),
                    "judge_metadata": {"expjudge": meta}, "sub_tasks": []}
        graded = [walk(child) for child in children]
        return {**base, "score": score_from_children(graded), "valid_score": all(c["valid_score"] for c in graded),
                "explanation": "Aggregated score from sub-tasks.", "task_category": None,
                "finegrained_task_category": node.get("finegrained_task_category"), "judge_metadata": None,
                "sub_tasks": graded}

    return walk(rubric.tree)


def score_from_children(children: list[dict[str, Any]]) -> float:
    """PaperBench's weighted mean of the children's scores (0 when their weights sum to 0)."""
    total = sum(float(child["weight"]) for child in children)
    return sum(float(c["score"]) * float(c["weight"]) for c in children) / total if total else 0.0


def _cut(node: dict[str, Any], category: str | None) -> dict[str, Any] | None:
    """The graded tree keeping only `category`'s leaves (None: all), inner scores recomputed (PaperBench's
    `reduce_to_category`, then `update_all_grades`)."""
    if not node["sub_tasks"]:
        return node if category is None or node["task_category"] == category else None
    kept = [c for c in (_cut(child, category) for child in node["sub_tasks"]) if c is not None]
    return {**node, "sub_tasks": kept, "score": score_from_children(kept)} if kept else None


def _leaves(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node] if not node["sub_tasks"] else [leaf for c in node["sub_tasks"] for leaf in _leaves(c)]


def category_figures(tree: dict[str, Any]) -> list[CategoryFigures]:
    """Per category present, then "all": leaves, passed, failed, unscored and the weighted score."""
    rows: list[CategoryFigures] = []
    for category in (*CATEGORIES, None):
        cut = _cut(tree, category)
        if cut is None:
            continue
        leaves = _leaves(cut)
        unscored = sum(not leaf["valid_score"] for leaf in leaves)
        passed = sum(leaf["score"] >= 1 for leaf in leaves)
        rows.append(CategoryFigures(category or "all", len(leaves), passed, len(leaves) - passed - unscored,
                                    unscored, cut["score"]))
    return rows


@dataclass
class PaperBenchGrade:
    """A PaperBench submission's grade: the graded tree, its figures and the grades it was read from."""

    paper_id: str
    submission_id: str
    tree: dict[str, Any]
    figures: list[CategoryFigures]
    grades: dict[str, Grade]  # category -> its grade (categories without evidence have none)
    from_cache: dict[str, bool] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    failed_unjudged: dict[str, str] = field(default_factory=dict)  # category -> why all its leaves fail

    @property
    def score(self) -> float:
        """The root's weighted score (0-1), PaperBench's replication score."""
        return float(self.tree["score"])

    def summary(self) -> dict[str, Any]:
        """The JSON answer of the API and the client: figures, grade ids and the graded tree."""
        return {"paper_id": self.paper_id, "submission_id": self.submission_id, "score": self.score,
                "categories": [asdict(row) for row in self.figures],
                "grade_ids": {category: grade.grade_id for category, grade in self.grades.items()},
                "from_cache": self.from_cache, "failed_unjudged": self.failed_unjudged, "warnings": self.warnings,
                "graded_tree": self.tree}


def assemble(rubric: PaperBenchRubric, parts: list[CategoryPart], grades: dict[str, Grade], *,
             submission_id: str, from_cache: dict[str, bool] | None = None,
             warnings: list[str] | None = None) -> PaperBenchGrade:
    """The PaperBench grade of `parts` from their categories' grades (pure: the client uses it too)."""
    tree = graded_tree(rubric, outcomes(parts, grades))
    notes = list(warnings or [])
    for category, grade in grades.items():
        notes += [f"{category}: {warning}" for warning in grade.warnings]
    return PaperBenchGrade(paper_id=rubric.paper_id, submission_id=submission_id, tree=tree,
                           figures=category_figures(tree), grades=grades, from_cache=dict(from_cache or {}),
                           warnings=notes,
                           failed_unjudged={p.category: p.missing for p in parts if p.missing is not None})
