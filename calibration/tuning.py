"""`tune`: improve a judge on a train split, report it against the untuned judge on a held-out split.

* The split is `split_by_group` (hashed group ids: all claims about one diff on one side), checked with
  `assert_disjoint`; `evaluate_held_out` refuses (raises `SplitLeakageError`) to report on any item or
  group that was tuned on.
* Embedded judge, check with a learned decision (judge/checks/learned.py; method "model", the default for
  such checks): a calibrated logistic model over the check's feature vector, trained on the train items
  (calibration/decision_model.py) and stored as plain data in `check.args.model`.
* Embedded judge, otherwise (method "thresholds"): a coordinate search over the leaf check's thresholds
  (`SEARCH_SPACES`) maximising macro-F1 (times coverage, so abstaining never pays), Cohen's kappa, or kappa
  on the classes that need judgement, on the train items.
* Cross-language (`train_language`): train on every item of one category (language), report on all the
  others; the tuned rubric's `tuned_on` says so, and `calibrate` on the same labels then reports on the
  other categories only.
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

from calibration.calibrate_run import LANGUAGES, CalibrationOutcome, LabelledItems, calibrate_items
from calibration.cases import JudgeCase
from calibration.decision_model import OBJECTIVES, TrainedModel, easy_classes, objective_score, train_check_model
from calibration.few_shot import choose_few_shot, criterion_with_examples
from calibration.items import LabelledItem
from calibration.labels import Label
from calibration.runner import CaseRunner
from calibration.splits import DEFAULT_SALT, Split, assert_disjoint, split_by_group
from judge.checks.learned import LearnableCheck, is_learnable
from judge.checks.registry import CHECKS
from judge.embeddings.encoder import Embedder, default_embedder
from judge.errors import InputError
from judge.judges.base import Judge
from judge.judges.embedded import EmbeddedJudge
from judge.models import CheckSpec, Rubric, Submission, Task, content_hash
from judge.models.evidence import GradingContext, LeafEvidence
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
METHODS = ("auto", "model", "thresholds")
_TUNED_SUFFIX = re.compile(r"-tuned-[0-9a-f]{8}$")
__all__ = ["OBJECTIVES", "objective_score"]  # re-exported from calibration.decision_model


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

    easy: list[str] = []

    def predict(args: dict[str, Any], item: LeafEvidence) -> Label | None:
        leaf_args = item.leaf.model_copy(update={"check": CheckSpec(name=item.leaf.check.name, args=args)})
        return runner.adapter.label_of(judge.decide(item.model_copy(update={"leaf": leaf_args}), context))

    def score(args: dict[str, Any]) -> float:
        return objective_score(reference, [predict(args, item) for item in evidence], objective, easy)

    current = dict(leaf.check.args)
    current.pop("model", None)  # a stored model would decide instead of the thresholds searched here
    if objective == "judgement_kappa":
        untuned = [predict(current, item) for item in evidence]
        easy[:] = easy_classes([str(r) for r in reference], [str(p) for p in untuned],
                               sorted({str(x) for x in [*reference, *untuned]}))
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
    model: TrainedModel | None = None
    split_note: str = ""
    train_language: str | None = None


def make_split(labelled: LabelledItems, eval_fraction: float, salt: str,
               train_language: str | None) -> tuple[Split[LabelledItem], dict[str, Any], str]:
    """The train / held-out split, what `tuned_on` records of it, and a one-line description.

    By group (`split_by_group`), or with `train_language`: every item of that category trains, every other
    item is held out.

    Raises:
        InputError: an unknown language, or a side left empty.
    """
    if train_language is None:
        split = split_by_group(labelled.items, eval_fraction=eval_fraction, salt=salt)
        marker: dict[str, Any] = {"salt": salt, "eval_fraction": eval_fraction}
        note, field_name = split.describe(), "--eval-fraction"
    else:
        language = LANGUAGES.get(train_language.lower())
        if language is None:
            raise InputError(f"unknown language {train_language!r} (use py or java)", field="--train-language")
        train = [i for i in labelled.items if i.category == language]
        held = [i for i in labelled.items if i.category != language]
        split = Split(train=train, eval=held, eval_fraction=eval_fraction, salt=salt)
        marker = {"split": "category", "train_category": language}
        others = sorted({str(i.category) for i in held})
        note = (f"train: every {language} item ({len(train)} items, {len({i.group_id for i in train})} groups); "
                f"held out: every item of {', '.join(others) or 'no other category'} ({len(held)} items, "
                f"{len({i.group_id for i in held})} groups)")
        field_name = "--train-language"
    assert_disjoint(split.train, split.eval)
    if not split.train or not split.eval:
        raise InputError(f"the split leaves a side empty ({note}); use more items, another --eval-fraction or "
                         "another --train-language", field=field_name)
    return split, marker, note


def resolve_method(method: str, judge: Judge, check_name: str) -> str:
    """"model" or "thresholds" for an embedded judge ("auto": model when the check can learn), else "few_shot".

    Raises:
        InputError: an unknown method, or "model" for a check without a learned decision.
    """
    if method not in METHODS:
        raise InputError(f"must be one of {', '.join(METHODS)}", field="--method")
    if not isinstance(judge, EmbeddedJudge):
        return "few_shot"
    learnable = check_name in CHECKS and is_learnable(CHECKS.get(check_name))
    if method == "model" and not learnable:
        raise InputError(f"check {check_name!r} has no learned decision (judge/checks/learned.py)", field="--method")
    return "model" if method == "model" or (method == "auto" and learnable) else "thresholds"


def default_objective(method: str) -> str:
    """The objective a method tunes for when none is given: kappa on the classes that need judgement for a
    learned model, macro-F1 for the threshold search."""
    return "judgement_kappa" if method == "model" else "macro_f1"


async def tune(labelled: LabelledItems, base: Rubric, judge: Judge, store: Store, *, out_dir: Path,
               eval_fraction: float = 0.3, salt: str = DEFAULT_SALT, compare: Sequence[Variant] = (),
               objective: str | None = None, shots_per_class: int = 1, install_dir: Path | None = None,
               embedder: Embedder | None = None, n_resamples: int = 1000, progress: bool = True,
               method: str = "auto", train_language: str | None = None) -> TuneOutcome:
    """Tune `judge` under `base` on the train side of `labelled` and compare on the held-out side."""
    embedder = embedder or default_embedder()
    split, split_marker, note = make_split(labelled, eval_fraction, salt, train_language)
    adapter = labelled.adapter
    leaf = adapter.leaf_for(base)
    chosen = resolve_method(method, judge, leaf.check.name)
    objective = objective or default_objective(chosen)
    # Only train units with a reference label can teach anything (a tie between raters gives none).
    train_cases: list[JudgeCase] = [case for case in (adapter.to_case(item, leaf) for item in split.train)
                                    if case.key in labelled.reference]
    train_ref = [labelled.reference[c.key] for c in train_cases]
    marker = {"label_set": labelled.label_hash, "label_source": labelled.name, **split_marker,
              "train_items": len(split.train), "objective": objective, "method": chosen}
    search: ThresholdSearch | None = None
    trained: TrainedModel | None = None
    examples: list[dict[str, Any]] = []
    base_args = {k: v for k, v in leaf.check.args.items() if k not in {"tuned_on", "few_shot", "model"}}
    if chosen in ("model", "thresholds"):
        runner = CaseRunner(base, judge, adapter, embedder=embedder, progress=False)
        built = runner.build_evidence(train_cases)
        usable = [(e, r, c) for e, r, c in zip(built, train_ref, train_cases, strict=True) if e is not None]
        evidence, reference = [e for e, _, _ in usable], [r for _, r, _ in usable]
        if chosen == "model":
            check = CHECKS.get(leaf.check.name)
            assert isinstance(check, LearnableCheck)
            trained = train_check_model(check, evidence, [str(r) for r in reference],
                                        [c.item.group_id for _, _, c in usable], objective=objective,
                                        provenance={"label_source": labelled.name})
            args = {**base_args, "model": trained.model.model_dump(mode="json")}
            how = (f"decision model trained for {objective} on {trained.model.trained_on['items']} train items "
                   f"(C={trained.c}, {trained.folds}-fold grouped cross-validation)")
        else:
            search = search_thresholds(evidence, reference, runner, objective=objective)
            args = {k: v for k, v in search.args.items() if k != "tuned_on"}
            how = f"thresholds searched for {objective} on {len(usable)} train items"
        tuned = tuned_rubric(base, leaf.template_id, args=args, marker=marker, how=how)
    else:
        examples = choose_few_shot(train_cases, train_ref, leaf, embedder, per_class=shots_per_class)
        args = {**base_args, "few_shot": examples}
        base_criterion = base_criterion_of(base, leaf.template_id)
        how = f"{len(examples)} few-shot examples from {len(split.train)} train items"
        tuned = tuned_rubric(base, leaf.template_id, args=args, marker=marker, how=how,
                             criterion=criterion_with_examples(base_criterion, examples))
    header = (f"{tuned.id}: tuned by `expjudge tune` from {base.id}@{base.version}\n"
              f"labels: {labelled.describe()}; {note}\n{how}")
    paths = [write_rubric(tuned, out_dir, header)]
    if install_dir is not None:
        paths.append(write_rubric(tuned, install_dir, header))
    held_note = (f"held-out {eval_fraction}" if train_language is None
                 else f"held-out: not {split_marker['train_category']}")
    held_out = labelled.with_items(list(split.eval), held_note)
    variants = [Variant("untuned", base, judge), Variant("tuned", tuned, judge), *compare]
    results = await evaluate_held_out(variants, held_out, split.train, store, embedder=embedder,
                                      n_resamples=n_resamples, progress=progress, out_dir=out_dir)
    return TuneOutcome(split, base, tuned, paths, how, search, examples,
                       [(v.name, r) for v, r in zip(variants, results, strict=True)], dict(leaf.check.args),
                       model=trained, split_note=note, train_language=split_marker.get("train_category"))


def base_criterion_of(rubric: Rubric, template_id: str) -> str:
    """The criterion of a template, without few-shot examples a previous tuning appended."""
    from calibration.few_shot import FEW_SHOT_HEADER

    for stage in rubric.stages:
        for leaf in stage.leaves:
            if leaf.id == template_id:
                return leaf.criterion.split(f" {FEW_SHOT_HEADER}")[0]
    raise InputError(f"no leaf template {template_id!r}", field=f"rubric {rubric.id}")
