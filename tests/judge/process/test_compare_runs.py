"""Spearman correlations across runs and the HTML report."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from process_test_support import RunSpec

from judge.errors import InputError
from judge.process.compare import compare_run_dirs, compare_runs, spearman
from judge.process.metrics import compute_process_metrics, load_run
from judge.process.models import PROCESS_METRIC_NAMES, EmbeddingInfo, ProcessMetrics, ProcessOptions
from judge.process.report_html import render_report_html
from tests.html_injection import PAYLOADS, assert_no_injection

NO_EMBED = ProcessOptions(embed_code=False)


def test_spearman_on_known_orderings() -> None:
    up = spearman("m", [1.0, 2.0, 3.0, 4.0, 5.0], [0.1, 0.3, 0.2, 0.5, 0.9])
    assert up.rho == pytest.approx(0.9)
    assert up.p_value is not None and 0.0 < up.p_value < 0.05
    down = spearman("m", [1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0])
    assert down.rho == pytest.approx(-1.0)


def test_spearman_skips_undefined_values_and_refuses_too_few_or_constant() -> None:
    partial = spearman("m", [1.0, None, 3.0, 4.0, 5.0], [1.0, 2.0, None, 4.0, 5.0])
    assert (partial.n, partial.rho) == (3, pytest.approx(1.0))
    few = spearman("m", [1.0, 2.0], [1.0, 2.0])
    assert (few.rho, few.p_value, few.n) == (None, None, 2)
    flat = spearman("m", [1.0, 1.0, 1.0], [1.0, 2.0, 3.0])
    assert (flat.rho, flat.note) == (None, "constant values")


def _runs(root: Path) -> list[Path]:
    # Run k: k of 4 validation steps succeed and the test metric grows with k.
    return [
        RunSpec(
            snapshots=[None] * 4,
            metrics=[0.6] * k + [None] * (4 - k),
            best_val_metric=0.6 if k else None,
            test_result={"success": True, "primary_metric": 0.5 + 0.1 * k},
            agent=f"agent{k}",
        ).write(root)
        for k in range(1, 5)
    ]


def test_compare_correlates_every_process_metric_with_improvement(tmp_path: Path) -> None:
    report = compare_run_dirs(_runs(tmp_path), options=NO_EMBED)
    by_metric = {c.metric: c for c in report.correlations}
    assert list(by_metric) == list(PROCESS_METRIC_NAMES)
    assert by_metric["step_success_rate"].rho == pytest.approx(1.0)
    assert by_metric["step_success_rate"].n == 4
    assert by_metric["exploration_spread"].n == 0  # not computed without embedding
    assert by_metric["step_completion_rate"].note == "constant values"
    assert [r.normalized_improvement for r in report.runs] == pytest.approx([0.1, 0.2, 0.3, 0.4])


def test_runs_from_different_embeddings_are_not_compared(tmp_path: Path) -> None:
    base = compute_process_metrics(load_run(_runs(tmp_path)[0]), options=NO_EMBED)
    info = EmbeddingInfo(
        model_name="m", model_path="/m", model_fingerprint="f", dimension=3, max_seq_length=8, pooling="mean",
        chunking="lines-v1",
    )  # fmt: skip
    runs = [
        base.model_copy(update={"embedding": info}),
        base.model_copy(update={"embedding": info.model_copy(update={"pooling": "sum"})}),
    ]
    with pytest.raises(InputError, match="different models, pooling or chunking"):
        compare_runs(runs)
    with pytest.raises(InputError, match="no runs"):
        compare_runs(list[ProcessMetrics]())


def test_the_html_report_holds_one_png_per_metric(tmp_path: Path) -> None:
    page = render_report_html(compare_run_dirs(_runs(tmp_path), options=NO_EMBED))
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == len(PROCESS_METRIC_NAMES)
    assert all(base64.b64decode(image).startswith(b"\x89PNG\r\n\x1a\n") for image in images)
    assert "agent4 / Generalization_domainbed" in page
    assert "<script" not in page and "http" not in page  # self-contained


def test_text_from_runs_reaches_the_html_report_as_text_only(tmp_path: Path) -> None:
    # Agent and task names, the source path, the test status and the embedding's names all come from run files.
    report = compare_run_dirs(_runs(tmp_path), options=NO_EMBED)
    info = EmbeddingInfo(
        model_name=PAYLOADS[0], model_path="/m", model_fingerprint=PAYLOADS[1], dimension=3, max_seq_length=8,
        pooling="mean", chunking=PAYLOADS[2],
    )  # fmt: skip
    runs = [
        run.model_copy(update={"agent": PAYLOADS[k % 3], "task": PAYLOADS[(k + 1) % 3], "test_status": PAYLOADS[k % 3]})
        for k, run in enumerate(report.runs)
    ]
    runs.append(report.runs[0].model_copy(update={"agent": None, "task": None, "source": f"/runs/{PAYLOADS[1]}"}))
    correlations = [c.model_copy(update={"note": PAYLOADS[2]}) for c in report.correlations]
    page = render_report_html(report.model_copy(update={"runs": runs, "correlations": correlations, "embedding": info}))
    assert_no_injection(page, images=len(PROCESS_METRIC_NAMES), visible=(*PAYLOADS, f"/runs/{PAYLOADS[1]}"))
