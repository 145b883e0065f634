"""Process metrics of research-agent trajectories, compatible with FML-bench (docs/process-metrics.md)."""

from judge.process.code_embeddings import CodeEmbedder, EmbeddingConfig
from judge.process.compare import CompareReport, MetricCorrelation, compare_run_dirs, compare_runs
from judge.process.fmlbench_ingest import load_fmlbench_run
from judge.process.metrics import compute_process_metrics, load_run, metrics_from_trajectory
from judge.process.models import (
    PERFORMANCE_METRIC,
    PROCESS_METRIC_NAMES,
    EmbeddingInfo,
    FinalTest,
    ImprovementRange,
    ProcessMetrics,
    ProcessOptions,
    ProcessRun,
)
from judge.process.submission_metrics import submission_process_metrics
from judge.process.trajectory_ingest import load_trajectory_run, read_trajectory_jsonl

__all__ = [
    "PERFORMANCE_METRIC",
    "PROCESS_METRIC_NAMES",
    "CodeEmbedder",
    "CompareReport",
    "EmbeddingConfig",
    "EmbeddingInfo",
    "FinalTest",
    "ImprovementRange",
    "MetricCorrelation",
    "ProcessMetrics",
    "ProcessOptions",
    "ProcessRun",
    "compare_run_dirs",
    "compare_runs",
    "compute_process_metrics",
    "load_fmlbench_run",
    "load_run",
    "load_trajectory_run",
    "metrics_from_trajectory",
    "read_trajectory_jsonl",
    "submission_process_metrics",
]
