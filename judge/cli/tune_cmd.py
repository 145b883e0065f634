"""`expjudge tune`: tune a judge on a train split and show it next to the untuned judge on the held-out split."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from judge.cli.app import app
from judge.cli.calibrate_cmd import (
    ApiBaseOpt,
    BootstrapOpt,
    DatabaseOpt,
    JudgeOpt,
    LabelsOpt,
    LanguageOpt,
    LimitOpt,
    ProgressOpt,
    RubricOpt,
    SamplesOpt,
    agreement_rows,
    check_out_dir,
    console,
    render_baseline_warnings,
    render_baselines,
    usage_line,
)
from judge.cli.display import shown
from judge.cli.errors import exit_on_input_error
from judge.errors import InputError, UnknownRubricError

if TYPE_CHECKING:
    from calibration.tuning import TuneOutcome, Variant
    from judge.store import Store


def resolve_compare(entry: str, store: Store, *, judge_spec: str, base_rubric_ref: str, samples: int,
                    api_base: str | None) -> Variant:
    """A --compare entry: a rubric (id or YAML path) graded by the main judge, or a judge on the base rubric.

    Raises:
        InputError: the entry is neither.
    """
    from calibration.calibrate_run import judge_for
    from calibration.tuning import Variant
    from judge.rubric_loader import load_rubric

    looks_like_judge = (entry == "embedded" or "/" in entry) and not entry.endswith((".yaml", ".yml"))
    try:
        rubric = load_rubric(entry)
    except UnknownRubricError:
        if not looks_like_judge:
            raise InputError("neither a rubric (id or YAML path) nor a judge ('embedded' or a litellm model "
                             "string such as openai/local)", field=f"--compare {entry}") from None
        return Variant(f"judge {entry}", load_rubric(base_rubric_ref),
                       judge_for(entry, store, samples=samples, api_base=api_base))
    return Variant(f"rubric {rubric.id}@{rubric.version}", rubric,
                   judge_for(judge_spec, store, samples=samples, api_base=api_base))


def render_tune(outcome: TuneOutcome, out: Console) -> None:
    """The split, what was tuned, and the variants side by side on the held-out split."""
    out.print(f"[bold]Tuning[/bold] {shown(outcome.base.id)}@{shown(outcome.base.version)}: {outcome.method}")
    out.print(f"split: {shown(outcome.split_note or outcome.split.describe())}")
    if outcome.model is not None:
        m = outcome.model
        weights = ", ".join(f"{c} x{w:g}" for c, w in zip(m.model.classes, m.model.decision_weights, strict=True))
        dropped = f"; left out (too few groups): {m.dropped}" if m.dropped else ""
        objective = shown(m.model.trained_on["objective"])
        out.print(f"train cross-validation ({m.folds} folds grouped by diff), {objective}: "
                  f"{m.cv_score_unweighted:.3f} unweighted -> {m.cv_score:.3f} with decision weights ({weights}); "
                  f"C={m.c}{dropped}")
    if outcome.search is not None:
        s = outcome.search
        before = outcome.base_args
        changed = ", ".join(f"{k} {before.get(k)!r} -> {v!r}" for k, v in s.args.items()
                            if k != "tuned_on" and before.get(k) != v) or "nothing"
        out.print(f"train {s.objective}: {s.score_before:.3f} untuned -> {s.score_after:.3f} tuned "
                  f"({s.evaluations} settings tried; changed: {shown(changed)})")
    for example in outcome.few_shot:
        out.print(f"few-shot: {shown(example['item_id'])} -> {shown(example['label'])}")
    reports = [r for _, r in outcome.held_out]
    ceiling = reports[0].report.ceiling if reports else None
    for name, result in outcome.held_out:
        fp = result.fingerprint
        out.print(f"{shown(name)}: rubric {shown(fp.rubric_id)}@{shown(fp.rubric_version)}, fingerprint {fp.digest}")
    rule = reports[0].report.overall.bootstrap.describe() if reports else "no held-out figures"
    table = Table(title=f"Held-out split only (never tuned on): {shown(rule)}")
    table.add_column("figure")
    for name, _ in outcome.held_out:
        table.add_column(shown(name))
    table.add_column("human vs human (same items)")
    agreement_rows(table, [*(r.report.overall for r in reports), ceiling])
    out.print(table)
    for name, result in outcome.held_out:
        out.print(f"{shown(name)}: {shown(usage_line(result.stats))}")
    tuned = dict(outcome.held_out).get("tuned")
    if tuned is not None:
        out.print("[bold]tuned, held-out split: beside the trivial baselines[/bold]")
        render_baselines(tuned.report, out)
        render_baseline_warnings(tuned.report, out)
    out.print(f"tuned rubric: {shown(', '.join(str(p) for p in outcome.tuned_paths))}")


def tune_summary(outcome: TuneOutcome) -> dict[str, Any]:
    """tune.json: the split, the search, the tuned rubric and every variant's held-out figures."""
    def figures(result: Any) -> dict[str, Any]:
        overall = result.report.overall
        baselines = result.record.report.get("baselines")
        return {"fingerprint": result.fingerprint.digest, "calibration_id": result.record.calibration_id,
                "n_paired": overall.n_paired, "coverage": overall.coverage,
                **{k: overall.headline()[k].model_dump(mode="json")
                   for k in ("macro_f1", "cohen_kappa", "accuracy", "krippendorff_alpha")},
                "baselines": baselines}

    split = outcome.split
    ceiling = outcome.held_out[0][1].report.ceiling if outcome.held_out else None
    return {
        "base_rubric": f"{outcome.base.id}@{outcome.base.version}",
        "tuned_rubric": f"{outcome.tuned.id}@{outcome.tuned.version}",
        "tuned_paths": [str(p) for p in outcome.tuned_paths],
        "method": outcome.method,
        "split": {"by": "category" if outcome.train_language else "group", "train_category": outcome.train_language,
                  "eval_fraction": split.eval_fraction, "salt": split.salt, "description": outcome.split_note,
                  "train_items": [i.item_id for i in split.train], "held_out_items": [i.item_id for i in split.eval]},
        "search": None if outcome.search is None else outcome.search.__dict__,
        "model": None if outcome.model is None else outcome.model.summary(),
        "few_shot": outcome.few_shot,
        "held_out": {name: figures(result) for name, result in outcome.held_out},
        "held_out_ceiling": None if ceiling is None else {
            k: ceiling.headline()[k].model_dump(mode="json") for k in ("macro_f1", "cohen_kappa", "accuracy")},
    }


@app.command("tune")
def tune_command(
    labels: LabelsOpt,
    out: Annotated[Path, typer.Option("--out", help="Folder for the tuned rubric, tune.json and reports.")],
    judge: JudgeOpt = "embedded",
    rubric: RubricOpt = "crscore-claims-v1",
    eval_fraction: Annotated[float, typer.Option("--eval-fraction", help="Held-out share of groups.")] = 0.3,
    compare: Annotated[list[str] | None, typer.Option(
        "--compare", help="Also compare a rubric (id or YAML) or a judge on the held-out split; repeatable.")] = None,
    objective: Annotated[str | None, typer.Option(
        "--objective", help="macro_f1, kappa or judgement_kappa (embedded judge; default: judgement_kappa for a "
        "learned model, macro_f1 for the threshold search).")] = None,
    method: Annotated[str, typer.Option(
        "--method", help="Embedded judge: 'model' (train the check's learned decision), 'thresholds' (search "
        "the rule thresholds) or 'auto' (model when the check has one).")] = "auto",
    train_language: Annotated[str | None, typer.Option(
        "--train-language", help="Cross-language: train on every item of this language (py or java), report on "
        "every other item.")] = None,
    shots: Annotated[int, typer.Option("--shots-per-class", min=1, help="LLM few-shot examples per class.")] = 1,
    install: Annotated[bool, typer.Option("--install", help="Also write the tuned rubric to the rubrics folder.")]
    = False,
    samples: SamplesOpt = 1,
    api_base: ApiBaseOpt = None,
    limit: LimitOpt = None,
    language: LanguageOpt = None,
    database_url: DatabaseOpt = None,
    bootstrap: BootstrapOpt = 1000,
    progress: ProgressOpt = True,
) -> None:
    """Train a decision model or tune thresholds (embedded) or few-shot examples (LLM) on a train split; report
    on the held-out split."""
    from calibration.calibrate_run import judge_for, load_items
    from calibration.tuning import tune
    from judge.rubric_loader import load_rubric
    from judge.settings import get_settings
    from judge.store import with_store  # SQLAlchemy: loaded on use

    async def run(store: Store) -> TuneOutcome:
        base = load_rubric(rubric)
        if language is not None and train_language is not None:
            raise InputError("give --language or --train-language, not both", field="--train-language")
        labelled = load_items(labels, language=language, limit=limit)
        main_judge = judge_for(judge, store, samples=samples, api_base=api_base)
        variants = [resolve_compare(entry, store, judge_spec=judge, base_rubric_ref=rubric, samples=samples,
                                    api_base=api_base) for entry in compare or []]
        return await tune(labelled, base, main_judge, store, out_dir=out, eval_fraction=eval_fraction,
                          compare=variants, objective=objective, shots_per_class=shots,
                          install_dir=get_settings().rubrics_dir if install else None, n_resamples=bootstrap,
                          progress=progress, method=method, train_language=train_language)

    with exit_on_input_error():
        check_out_dir(out)
        outcome = asyncio.run(with_store(database_url, run))
        try:
            (out / "tune.json").write_text(json.dumps(tune_summary(outcome), indent=2, default=str), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write tune.json: {exc.strerror}", field=str(out)) from exc
    render_tune(outcome, console())
