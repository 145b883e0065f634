"""`tune`: improve a judge on a train split, report it against the untuned judge on a held-out split.

* The split is `split_by_group` (hashed group ids: all claims about one diff on one side), checked with
  `assert_disjoint`; `evaluate_held_out` refuses (raises `SplitLeakageError`) to report on any item or
  group that was tuned on.
* Embedded judge: a coordinate search over the leaf check's thresholds (`SEARCH_SPACES`) maximising
  macro-F1 (times coverage, so abstaining never pays) or Cohen's kappa on the train items.
* LLM judge: few-shot examples chosen from labelled train items (calibration/few_shot.py) appended to the
  criterion the model sees.
* The tuned judge is a new rubric version: id `<base>-tuned-<hash>`, version `<base version>+tuned.<hash>`,
  with `check.args.tuned_on` naming the label set and split, so `calibrate` on the same labels reports on
  the held-out side only. Its fingerprint is new, hence uncalibrated until measured; the held-out
  measurement here is stored as its first calibration run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sklearn.metrics import cohen_kappa_score, f1_score

from calibration.calibrate_run import CalibrationOutcome, LabelledItems, calibrate_items
from calibration.few_shot import choose_few_shot, criterion_with_examples
from calibration.items import LabelledItem
from calibration.labels import Label
from calibration.runner import CaseRunner, JudgeCase
from calibration.splits import DEFAULT_SALT, Split, assert_disjoint, split_by_group
from judge.errors import InputError
from judge.evidence.embeddings import Embedder, default_embedder
from judge.evidence.types import GradingContext, LeafEvidence
from judge.judges.base import Judge
from judge.judges.embedded import EmbeddedJudge
from judge.models import CheckSpec, Rubric, Submission, Task, content_hash
from judge.rubric_loader import parse_rubric
from judge.store import Store

# Candidate values per check argument. 1.01 switches a rule off (its score never exceeds 1).
SEARCH_SPACES: dict[str, dict[str, list[Any]]] = {
    "claim_vs_diff": {
        "incomplete_at": [0.4, 0.6, 0.8, 1.01],
        "incorrect_at": [0.3, 0.5, 0.7, 0.9, 1.01],
        "min_identifiers": [1, 2, 3],
        "conflict_weight": [0.0, 0.5, 1.0],
        "hedge_min": [1, 2, 3, 99],
        "speculation_similarity": [0.1, 0.2, 0.3, 0.4, 0.5],
        "correct_threshold": [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3],
        "low_similarity_label": ["unverifiable", "incorrect", "correct"],
    },
}
OBJECTIVES = ("macro_f1", "kappa")
_TUNED_SUFFIX = re.compile(r"-tuned-[0-9a-f]{8}$")


def objective_score(reference: Sequence[Label], predicted: Sequence[Label | None], objective: str) -> float:
    """macro-F1 (over classes on either side, as the report) or kappa on decided items, times coverage."""
    pairs = [(str(r), str(p)) for r, p in zip(reference, predicted, strict=True) if p is not None]
    if not pairs:
        return 0.0
    ref, pred = [r for r, _ in pairs], [p for _, p in pairs]
    if objective == "kappa":
        value = 0.0 if len(set(ref) | set(pred)) < 2 else float(cohen_kappa_score(ref, pred))
    else:
        value = float(f1_score(ref, pred, average="macro", zero_division=0))
    return value * len(pairs) / len(reference)


@dataclass
class ThresholdSearch:
    """The outcome of a threshold search on the train items."""

    args: dict[str, Any]
    score_before: float
    score_after: float
    objective: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    evaluations: int = 0


def search_thresholds(evidence: Sequence[LeafEvidence], reference: Sequence[Label], runner: CaseRunner, *,
                      objective: str = "macro_f1", rounds: int = 3) -> ThresholdSearch:
    """Coordinate search over the leaf check's arguments; a value replaces the current one only if better.

    Raises:
        InputError: no search space for the check, an unknown objective, or no train evidence.
    """
    if objective not in OBJECTIVES:
        raise InputError(f"must be one of {', '.join(OBJECTIVES)}", field="objective")
    if not evidence:
        raise InputError("no train item to tune on", field="labels")
    leaf = evidence[0].leaf
    space = SEARCH_SPACES.get(leaf.check.name)
    if space is None:
        raise InputError(f"no threshold search space for check {leaf.check.name!r}", field="rubric")
    judge = EmbeddedJudge()
    context = GradingContext(task=Task(task_id="tune"), submission=Submission(submission_id="tune"),
                             rubric=runner.rubric)

    def score(args: dict[str, Any]) -> float:
        predicted = []
        for item in evidence:
            leaf_args = item.leaf.model_copy(update={"check": CheckSpec(name=item.leaf.check.name, args=args)})
            predicted.append(runner.adapter.label_of(judge.decide(item.model_copy(update={"leaf": leaf_args}),
                                                                  context)))
        return objective_score(reference, predicted, objective)

    current = dict(leaf.check.args)
    best = before = score(current)
    result = ThresholdSearch(args=current, score_before=before, score_after=before, objective=objective)
    for _ in range(rounds):
        improved = False
        for name, values in space.items():
            for value in values:
                if current.get(name) == value:
                    continue
                trial = score({**current, name: value})
                result.evaluations += 1
                if trial > best + 1e-12:
                    best, current, improved = trial, {**current, name: value}, True
                    result.steps.append({"arg": name, "value": value, "score": round(trial, 4)})
        if not improved:
            break
    result.args, result.score_after = current, best
    return result


def tuned_rubric(base: Rubric, template_id: str, *, args: dict[str, Any], marker: dict[str, Any],
                 criterion: str | None = None, how: str = "") -> Rubric:
    """A new rubric version with one leaf's check arguments (and criterion) replaced."""
    data = base.model_dump(mode="json")
    for stage in data["stages"]:
        for leaf in stage["leaves"]:
            if leaf["id"] == template_id:
                leaf["check"]["args"] = {**args, "tuned_on": marker}
                if criterion is not None:
                    leaf["criterion"] = criterion
    short = content_hash(data["stages"])[:8]
    data["id"] = f"{_TUNED_SUFFIX.sub('', base.id)}-tuned-{short}"
    data["version"] = f"{base.version.split('+tuned.')[0]}+tuned.{short}"
    data["description"] = f"{base.description.strip()} Tuned from {base.id}@{base.version} by expjudge tune ({how})."
    return parse_rubric(data, "tuned rubric")


def write_rubric(rubric: Rubric, folder: Path, header: str) -> Path:
    """Write `rubric` as `<folder>/<id>.yaml` with a comment header; returns the path."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{rubric.id}.yaml"
        comment = "".join(f"# {line}\n" for line in header.splitlines())
        body = yaml.safe_dump(rubric.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=110)
        path.write_text(comment + body, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the tuned rubric: {exc.strerror}", field=str(folder)) from exc
    return path


@dataclass
class Variant:
    """A judge configuration compared on the held-out split."""

    name: str
    rubric: Rubric
    judge: Judge


async def evaluate_held_out(variants: Sequence[Variant], held_out: LabelledItems,
                            tuned_on_items: Sequence[LabelledItem], store: Store, *,
                            embedder: Embedder | None = None, n_resamples: int = 1000, progress: bool = True,
                            out_dir: Path | None = None) -> list[CalibrationOutcome]:
    """Each variant's agreement on the held-out items, stored against its fingerprint.

    Raises:
        SplitLeakageError: an item or group that was tuned on is among the held-out items.
    """
    assert_disjoint(tuned_on_items, held_out.items)
    results = []
    for variant in variants:
        folder = out_dir / "heldout" / re.sub(r"[^a-z0-9_.-]+", "-", variant.name.lower()) if out_dir else None
        results.append(await calibrate_items(
            held_out, variant.rubric, variant.judge, store, embedder=embedder, n_resamples=n_resamples,
            progress=progress, out_dir=folder, title=f"Held-out calibration: {variant.name}"))
    return results


@dataclass
class TuneOutcome:
    """What tune did and how each variant fared on the held-out split."""

    split: Split[LabelledItem]
    base: Rubric
    tuned: Rubric
    tuned_paths: list[Path]
    method: str
    search: ThresholdSearch | None
    few_shot: list[dict[str, Any]]
    held_out: list[tuple[str, CalibrationOutcome]]
    base_args: dict[str, Any] = field(default_factory=dict)


async def tune(labelled: LabelledItems, base: Rubric, judge: Judge, store: Store, *, out_dir: Path,
               eval_fraction: float = 0.3, salt: str = DEFAULT_SALT, compare: Sequence[Variant] = (),
               objective: str = "macro_f1", shots_per_class: int = 1, install_dir: Path | None = None,
               embedder: Embedder | None = None, n_resamples: int = 1000, progress: bool = True) -> TuneOutcome:
    """Tune `judge` under `base` on the train side of `labelled` and compare on the held-out side."""
    embedder = embedder or default_embedder()
    split = split_by_group(labelled.items, eval_fraction=eval_fraction, salt=salt)
    assert_disjoint(split.train, split.eval)
    if not split.train or not split.eval:
        raise InputError(f"the split leaves a side empty ({split.describe()}); use more items or another "
                         "--eval-fraction", field="--eval-fraction")
    adapter = labelled.adapter
    leaf = adapter.leaf_for(base)
    # Only train units with a reference label can teach anything (a tie between raters gives none).
    train_cases: list[JudgeCase] = [case for case in (adapter.to_case(item, leaf) for item in split.train)
                                    if case.key in labelled.reference]
    train_ref = [labelled.reference[c.key] for c in train_cases]
    marker = {"label_set": labelled.label_hash, "label_source": labelled.name, "salt": salt,
              "eval_fraction": eval_fraction, "train_items": len(split.train), "objective": objective}
    search: ThresholdSearch | None = None
    examples: list[dict[str, Any]] = []
    if isinstance(judge, EmbeddedJudge):
        runner = CaseRunner(base, judge, adapter, embedder=embedder, progress=False)
        built = runner.build_evidence(train_cases)
        usable = [(e, r) for e, r in zip(built, train_ref, strict=True) if e is not None]
        search = search_thresholds([e for e, _ in usable], [r for _, r in usable], runner, objective=objective)
        args = {k: v for k, v in search.args.items() if k != "tuned_on"}
        how = f"thresholds searched for {objective} on {len(usable)} train items"
        tuned = tuned_rubric(base, leaf.template_id, args=args, marker=marker, how=how)
    else:
        examples = choose_few_shot(train_cases, train_ref, leaf, embedder, per_class=shots_per_class)
        args = {k: v for k, v in leaf.check.args.items() if k not in {"tuned_on", "few_shot"}}
        args["few_shot"] = examples
        base_criterion = base_criterion_of(base, leaf.template_id)
        how = f"{len(examples)} few-shot examples from {len(split.train)} train items"
        tuned = tuned_rubric(base, leaf.template_id, args=args, marker=marker, how=how,
                             criterion=criterion_with_examples(base_criterion, examples))
    header = (f"{tuned.id}: tuned by `expjudge tune` from {base.id}@{base.version}\n"
              f"labels: {labelled.describe()}; {split.describe()}\n{how}")
    paths = [write_rubric(tuned, out_dir, header)]
    if install_dir is not None:
        paths.append(write_rubric(tuned, install_dir, header))
    held_out = labelled.with_items(list(split.eval), f"held-out {eval_fraction}")
    variants = [Variant("untuned", base, judge), Variant("tuned", tuned, judge), *compare]
    results = await evaluate_held_out(variants, held_out, split.train, store, embedder=embedder,
                                      n_resamples=n_resamples, progress=progress, out_dir=out_dir)
    return TuneOutcome(split, base, tuned, paths, how, search, examples,
                       [(v.name, r) for v, r in zip(variants, results, strict=True)], dict(leaf.check.args))


def base_criterion_of(rubric: Rubric, template_id: str) -> str:
    """The criterion of a template, without few-shot examples a previous tuning appended."""
    from calibration.few_shot import FEW_SHOT_HEADER

    for stage in rubric.stages:
        for leaf in stage.leaves:
            if leaf.id == template_id:
                return leaf.criterion.split(f" {FEW_SHOT_HEADER}")[0]
    raise InputError(f"no leaf template {template_id!r}", field=f"rubric {rubric.id}")
