"""Across runs: how each process metric relates to performance (Spearman's rho with p-value and n)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from judge.errors import InputError
from judge.process.code_embeddings import CodeEmbedder
from judge.process.metrics import compute_process_metrics, load_run
from judge.process.models import (
    PERFORMANCE_METRIC,
    PROCESS_METRIC_NAMES,
    EmbeddingInfo,
    ProcessMetrics,
    ProcessOptions,
)

MIN_RUNS = 3  # below three pairs a rank correlation has no usable p-value


class MetricCorrelation(BaseModel):
    """Spearman's rho of one process metric with performance over the runs that have both."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    rho: float | None
    p_value: float | None
    n: int
    note: str | None = None


class CompareReport(BaseModel):
    """Process metrics of a set of runs and their correlations with performance."""

    model_config = ConfigDict(extra="forbid")

    performance_metric: str = PERFORMANCE_METRIC
    embedding: EmbeddingInfo | None
    runs: list[ProcessMetrics]
    correlations: list[MetricCorrelation]


def spearman(metric: str, xs: Sequence[float | None], ys: Sequence[float | None]) -> MetricCorrelation:
    """Spearman's rho and two-sided p-value over the pairs where both values are defined.

    Fewer than three pairs, or a side whose values are all equal, give rho None with a note.
    """
    from scipy.stats import spearmanr

    pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if x is not None and y is not None]
    n = len(pairs)
    if n < MIN_RUNS:
        return MetricCorrelation(metric=metric, rho=None, p_value=None, n=n, note=f"fewer than {MIN_RUNS} runs")
    left, right = [x for x, _ in pairs], [y for _, y in pairs]
    if len(set(left)) == 1 or len(set(right)) == 1:
        return MetricCorrelation(metric=metric, rho=None, p_value=None, n=n, note="constant values")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = spearmanr(left, right)
    rho, p_value = float(result.statistic), float(result.pvalue)
    if not (math.isfinite(rho) and math.isfinite(p_value)):
        return MetricCorrelation(metric=metric, rho=None, p_value=None, n=n, note="undefined")
    return MetricCorrelation(metric=metric, rho=rho, p_value=p_value, n=n)


def _embedding_key(info: EmbeddingInfo | None) -> tuple[str, str, str] | None:
    return None if info is None else (info.model_fingerprint, info.pooling, info.chunking)


def compare_runs(runs: Sequence[ProcessMetrics]) -> CompareReport:
    """Correlate every process metric with normalised improvement across `runs`.

    Raises:
        InputError: No runs, or runs whose exploration figures came from different embeddings
            (model, pooling or chunking), which are not comparable.
    """
    if not runs:
        raise InputError("no runs to compare", field="runs")
    embeddings = {_embedding_key(run.embedding) for run in runs if run.embedding is not None}
    if len(embeddings) > 1:
        raise InputError("runs were embedded with different models, pooling or chunking", field="runs")
    performance = [run.metric_value(PERFORMANCE_METRIC) for run in runs]
    correlations = [
        spearman(name, [run.metric_value(name) for run in runs], performance) for name in PROCESS_METRIC_NAMES
    ]
    embedding = next((run.embedding for run in runs if run.embedding is not None), None)
    return CompareReport(embedding=embedding, runs=list(runs), correlations=correlations)


def compare_run_dirs(
    paths: Sequence[Path],
    *,
    baseline_dir: Path | None = None,
    options: ProcessOptions | None = None,
    embedder: CodeEmbedder | None = None,
) -> CompareReport:
    """Load each run, compute its metrics with one embedder, and correlate them (see `compare_runs`)."""
    options = options or ProcessOptions()
    if embedder is None and options.embed_code:
        embedder = CodeEmbedder()
    metrics = [
        compute_process_metrics(load_run(path, baseline_dir=baseline_dir), options=options, embedder=embedder)
        for path in paths
    ]
    return compare_runs(metrics)
