"""Fit and report for bench/judging/coder_signal.py: logistic combinations fitted on the train papers' rows, AUC and
macro-F1 on the held-out papers' rows with bootstrap confidence intervals (resampling held-out TASKS, since
the leaves of a task are not independent).

Every row is one labelled requirement leaf of one variant in one mode ("text": no reference; "reference":
the paper's code as the task's reference): its embedded-judge features, the judge's verdict today, and the
coder model's P(yes) for the leaf's top acting candidate unit (`p_yes`; in reference mode `p_yes_ref` too,
read with the reference span). A row without an acting candidate is decided by the gate (fail) in every
system and has no reading.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score, roc_auc_score
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from judge.local_models.code_reading import logit

CORE_VARIANTS = ("own", "rewrite", "drop", "other_task")
C_GRID = (0.01, 0.1, 1.0, 10.0)


@dataclass(frozen=True)
class System:
    """One way of deciding a row: the feature columns of a fitted model, or a fixed rule."""

    name: str
    columns: Callable[[dict[str, Any]], list[float]] | None = None
    rule: Callable[[dict[str, Any]], float] | None = None  # a score decided at > 0.5 without fitting


def systems(mode: str, text_features: Sequence[str], reference_features: Sequence[str]) -> list[System]:
    """The systems compared in one mode."""
    names = list(text_features) if mode == "text" else [*reference_features, *text_features]

    def embedded(row: dict[str, Any]) -> list[float]:
        return [row["features"][n] for n in names]

    def coder_only(row: dict[str, Any]) -> list[float]:
        return [logit(row["p_yes"])] + ([logit(row["p_yes_ref"])] if mode == "reference" else [])

    out = [
        System("judge today (expbench-v2 verdict)", rule=lambda r: float(r["judge_verdict"] == "pass")),
        System("cosine alone (txt_similarity)", columns=lambda r: [r["features"]["txt_similarity"]]),
        System("(a) embedded features", columns=embedded),
        System("coder P(yes) alone", columns=coder_only),
        System("(c) embedded + coder", columns=lambda r: embedded(r) + coder_only(r)),
    ]
    if mode == "reference":
        out.insert(3, System("ref_embedding alone", columns=lambda r: [r["features"]["ref_embedding"]]))
    return out


@dataclass
class Fitted:
    system: System
    c: float | None
    threshold: float
    pipeline: Any

    def scores(self, rows: Sequence[dict[str, Any]]) -> np.ndarray:
        """P(implemented) of each row (0 for a row the gate decides)."""
        out = np.zeros(len(rows))
        acting = [i for i, r in enumerate(rows) if r["acting"]]
        if self.system.rule is not None:
            return np.array([self.system.rule(r) for r in rows], dtype=np.float64)
        if acting:
            assert self.system.columns is not None
            x = np.array([self.system.columns(rows[i]) for i in acting], dtype=np.float64)
            out[acting] = self.pipeline.predict_proba(x)[:, 1]
        return out


def _folds(groups: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    n = min(5, len(set(groups)))
    return list(GroupKFold(n_splits=n).split(np.zeros(len(groups)), groups=groups))


def _best_threshold(y: np.ndarray, p: np.ndarray) -> float:
    """The decision threshold on P(implemented) that maximises macro-F1 of these predictions."""
    candidates = np.unique(np.concatenate([p, [0.5]]))
    scores = [f1_score(y, p >= t, average="macro", zero_division=0) for t in candidates]
    return float(candidates[int(np.argmax(scores))])


def fit(system: System, train: Sequence[dict[str, Any]]) -> Fitted:
    """C by grouped cross-validated log-loss, the threshold by grouped cross-validated macro-F1, both on the
    train rows only (rows the gate decides are left out of the fit; they are fails for every system)."""
    if system.rule is not None:
        return Fitted(system, None, 0.5, None)
    assert system.columns is not None
    rows = [r for r in train if r["acting"]]
    x = np.array([system.columns(r) for r in rows], dtype=np.float64)
    y = np.array([r["label"] == "pass" for r in rows], dtype=int)
    groups = [r["task"] for r in rows]
    folds = _folds(groups)

    def make(c: float) -> Any:
        return make_pipeline(StandardScaler(), LogisticRegression(C=c, class_weight="balanced", max_iter=5000))

    best: tuple[float, float, np.ndarray] | None = None
    for c in C_GRID:
        cv = np.zeros(len(rows))
        for fit_idx, test_idx in folds:
            cv[test_idx] = make(c).fit(x[fit_idx], y[fit_idx]).predict_proba(x[test_idx])[:, 1]
        loss = -float(np.mean(y * np.log(np.clip(cv, 1e-9, 1)) + (1 - y) * np.log(np.clip(1 - cv, 1e-9, 1))))
        if best is None or loss < best[0]:
            best = (loss, c, cv)
    assert best is not None
    _, c, cv = best
    return Fitted(system, c, _best_threshold(y, cv), make(c).fit(x, y))


def metrics(y: np.ndarray, score: np.ndarray, threshold: float) -> tuple[float | None, float]:
    """(AUC, macro-F1 at the threshold); AUC None when one class is missing."""
    auc = float(roc_auc_score(y, score)) if len(set(y.tolist())) == 2 else None
    f1 = float(f1_score(y, score >= threshold, average="macro", zero_division=0))
    return auc, f1


Draws = dict[str, dict[str, list[float]]]


def bootstrap(
    rows: Sequence[dict[str, Any]],
    scores: dict[str, np.ndarray],
    thresholds: dict[str, float],
    resamples: int,
    seed: int = 0,
) -> tuple[dict[str, dict[str, tuple[float, float]]], Draws]:
    """95% intervals of AUC and macro-F1 per system, resampling tasks with replacement, and the draws
    themselves (for intervals of differences on the same resamples)."""
    tasks = sorted({r["task"] for r in rows})
    index = {t: [i for i, r in enumerate(rows) if r["task"] == t] for t in tasks}
    y = np.array([r["label"] == "pass" for r in rows], dtype=int)
    rng = np.random.default_rng(seed)
    draws: Draws = {name: {"auc": [], "f1": []} for name in scores}
    for _ in range(resamples):
        picked = np.concatenate([index[t] for t in rng.choice(tasks, size=len(tasks), replace=True)])
        if len(set(y[picked].tolist())) < 2:
            continue
        for name, score in scores.items():
            auc, f1 = metrics(y[picked], score[picked], thresholds[name])
            draws[name]["auc"].append(auc if auc is not None else float("nan"))
            draws[name]["f1"].append(f1)
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for name, values in draws.items():
        out[name] = {
            k: (float(np.nanpercentile(v, 2.5)), float(np.nanpercentile(v, 97.5))) for k, v in values.items() if v
        }
    return out, draws


def difference_interval(draws: Draws, a: str, c: str, key: str) -> tuple[float, float]:
    """95% interval of (c - a) over the same bootstrap draws."""
    diff = np.array(draws[c][key]) - np.array(draws[a][key])
    return float(np.nanpercentile(diff, 2.5)), float(np.nanpercentile(diff, 97.5))


def _share(flags: Sequence[bool]) -> str:
    return f"{np.mean(flags):.2f} ({len(flags)})" if len(flags) else "-"


def _interval(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.3f}"


def raw_signal(rows: Sequence[dict[str, Any]], mode: str) -> dict[str, Any]:
    """The coder's P(yes) unfitted: AUC of the top candidate's reading, of the own cited unit's against the
    negatives' top candidates, and the mean P(yes) per class (its bias)."""
    field = "p_yes" if mode == "text" else "p_yes_ref"
    read = [r for r in rows if r["acting"] and r["variant"] in CORE_VARIANTS and field in r]
    y = np.array([r["label"] == "pass" for r in read], dtype=int)
    p = np.array([r[field] for r in read])
    cited_field = "p_cited" if mode == "text" else "p_cited_ref"
    cited = [r[cited_field] for r in read if r["variant"] == "own" and r.get(cited_field) is not None]
    negatives = [r[field] for r in read if r["label"] == "fail"]
    out: dict[str, Any] = {"rows": len(read)}
    if len(set(y.tolist())) == 2:
        out["auc_top_candidate"] = round(float(roc_auc_score(y, p)), 4)
        out["mean_p_yes_implemented"] = round(float(p[y == 1].mean()), 4)
        out["mean_p_yes_not"] = round(float(p[y == 0].mean()), 4)
    if cited and negatives:
        labels = [1] * len(cited) + [0] * len(negatives)
        out["auc_own_cited_unit_vs_negatives"] = round(float(roc_auc_score(labels, cited + negatives)), 4)
        out["own_cited_units"] = len(cited)
    return out


def timing(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Model time of the readings evaluated (not cached) when the rows were collected: wall seconds (they
    include waiting for a core on a loaded machine) and CPU seconds of this process (one llama.cpp thread)."""
    evaluated = [x for r in rows for x in r.get("readings", []) if not x["cached"]]
    timed = [x for x in evaluated if x.get("cpu_seconds") is not None]
    warm = [x for x in timed if x["reused"]]
    cold = [x for x in timed if not x["reused"]]
    leaves = [r for r in rows if r["acting"]]
    timed_leaves = [r for r in leaves if all(x.get("cpu_seconds") is not None for x in r.get("readings", []))]
    cpu_total = sum(x["cpu_seconds"] for x in timed)

    def median(values: list[float]) -> float | None:
        return round(float(np.median(values)), 2) if values else None

    return {
        "readings_evaluated": len(evaluated),
        "readings_total": sum(len(r.get("readings", [])) for r in rows),
        "leaf_rows_read": len(leaves),
        "model_wall_seconds": round(sum(x["seconds"] for x in evaluated), 1),
        "wall_seconds_per_leaf_row": round(sum(x["seconds"] for x in evaluated) / len(leaves), 2) if leaves else None,
        "model_cpu_seconds": round(cpu_total, 1),
        "readings_with_cpu": len(timed),
        "cpu_seconds_per_leaf_row": round(
            sum(x["cpu_seconds"] for r in timed_leaves for x in r["readings"] if not x["cached"]) / len(timed_leaves), 2
        )
        if timed_leaves
        else None,
        "cpu_tokens_per_second": round(sum(x["evaluated"] for x in timed) / cpu_total, 1) if cpu_total else None,
        "warm_readings": len(warm),
        "warm_median_cpu_s": median([x["cpu_seconds"] for x in warm]),
        "warm_median_wall_s": median([x["seconds"] for x in warm]),
        "warm_tokens_reused": sum(x["reused"] for x in warm),
        "warm_tokens_evaluated": sum(x["evaluated"] for x in warm),
        "cold_readings": len(cold),
        "cold_median_cpu_s": median([x["cpu_seconds"] for x in cold]),
        "cold_median_wall_s": median([x["seconds"] for x in cold]),
        "tokens_evaluated": sum(x["evaluated"] for x in evaluated),
        "truncated_share": round(float(np.mean([x["truncated"] for x in evaluated])), 3) if evaluated else None,
    }


def print_report(
    console: Any,
    rows: Sequence[dict[str, Any]],
    train: Sequence[str],
    held_out: Sequence[str],
    text_features: Sequence[str],
    reference_features: Sequence[str],
    resamples: int,
) -> dict[str, Any]:
    """Fit on the train papers, print the held-out figures per mode, return them."""
    from rich.table import Table

    report: dict[str, Any] = {"timing": timing(rows)}
    for mode in ("text", "reference"):
        mode_rows = [r for r in rows if r["mode"] == mode]
        fit_rows = [r for r in mode_rows if r["paper"] in train and r["variant"] in CORE_VARIANTS]
        test_rows = [r for r in mode_rows if r["paper"] in held_out and r["variant"] in CORE_VARIANTS]
        restated = [r for r in mode_rows if r["paper"] in held_out and r["variant"].startswith("restate_")]
        y_fit = [r["label"] == "pass" for r in fit_rows if r["acting"]]
        if len(set(y_fit)) < 2 or not test_rows:
            console.print(
                f"{mode} mode: not enough rows to fit and test ({len(fit_rows)} train, {len(test_rows)} held out)"
            )
            continue
        y = np.array([r["label"] == "pass" for r in test_rows], dtype=int)
        # The rows keep the features the judge computed when they were collected: fit on those.
        stored = set.intersection(*(set(r["features"]) for r in mode_rows if r["acting"]))
        missing = [n for n in (*text_features, *reference_features) if n not in stored]
        if missing:
            console.print(f"{mode} mode: features the judge has now but the rows lack (left out): {missing}")
        names = ([n for n in text_features if n in stored], [n for n in reference_features if n in stored])
        fitted = {s.name: fit(s, fit_rows) for s in systems(mode, *names)}
        scores = {name: f.scores(test_rows) for name, f in fitted.items()}
        thresholds = {name: f.threshold for name, f in fitted.items()}
        intervals, draws = bootstrap(test_rows, scores, thresholds, resamples)
        table = Table(
            title=f"{mode} mode: fitted on {len({r['task'] for r in fit_rows})} train tasks "
            f"({len(y_fit)} acting leaf rows), held out {len({r['task'] for r in test_rows})} tasks "
            f"({int(y.sum())} implemented, {int(len(y) - y.sum())} not)"
        )
        for column in (
            "system",
            "AUC [95% CI]",
            "macro-F1 [95% CI]",
            "C",
            "thr",
            "own",
            "rewrite",
            "drop",
            "other_task",
            "restatements",
        ):
            table.add_column(column, justify="left" if column == "system" else "right")
        mode_report: dict[str, Any] = {
            "systems": {},
            "raw_signal_all_rows": raw_signal(mode_rows, mode),
            "raw_signal_held_out": raw_signal(test_rows, mode),
        }
        for name, f in fitted.items():
            auc, f1 = metrics(y, scores[name], f.threshold)
            auc = None if f.system.rule is not None else auc  # a pass/not verdict ranks nothing
            passed = scores[name] >= f.threshold
            shares = {
                v: [bool(p) for p, r in zip(passed, test_rows, strict=True) if r["variant"] == v] for v in CORE_VARIANTS
            }
            restate_pass = [bool(p) for p in f.scores(restated) >= f.threshold] if restated else []
            table.add_row(
                name,
                _interval(auc, intervals[name].get("auc")),
                _interval(f1, intervals[name].get("f1")),
                "-" if f.c is None else f"{f.c:g}",
                f"{f.threshold:.2f}",
                *[_share(shares[v]) for v in CORE_VARIANTS],
                _share(restate_pass),
            )
            mode_report["systems"][name] = {
                "auc": auc,
                "macro_f1": f1,
                "auc_ci": intervals[name].get("auc"),
                "f1_ci": intervals[name].get("f1"),
                "c": f.c,
                "threshold": f.threshold,
                "pass_share": {v: float(np.mean(s)) if s else None for v, s in shares.items()},
                "restatements_pass": float(np.mean(restate_pass)) if restate_pass else None,
                "restatement_rows": len(restate_pass),
            }
        console.print(table)
        a, c = "(a) embedded features", "(c) embedded + coder"
        for key in ("auc", "f1"):
            low, high = difference_interval(draws, a, c, key)
            delta = (
                mode_report["systems"][c]["auc" if key == "auc" else "macro_f1"]
                - mode_report["systems"][a]["auc" if key == "auc" else "macro_f1"]
            )
            mode_report[f"c_minus_a_{key}"] = {"value": round(delta, 4), "ci": [round(low, 4), round(high, 4)]}
            console.print(
                f"  (c) - (a) {'AUC' if key == 'auc' else 'macro-F1'}: {delta:+.3f} [95% CI {low:+.3f}, {high:+.3f}]"
            )
        console.print(f"  coder P(yes) unfitted, held out: {mode_report['raw_signal_held_out']}")
        console.print(f"  coder P(yes) unfitted, all sampled rows: {mode_report['raw_signal_all_rows']}")
        report[mode] = mode_report
    console.print(f"timing: {report['timing']}")
    return report
