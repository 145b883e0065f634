"""changes.html: the comparison report as one self-contained page (inline CSS, no scripts, no fetches).

Everything that comes from the report (run, task and leaf ids, targets, baseline names, errors, notes, even the
keys of its dicts) is escaped exactly once on its way into the page, with `_e` or `_fmt`; both escape quotes too.
"""

from __future__ import annotations

import html
from typing import Any

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; margin: 0.8rem 0 1.6rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: right; vertical-align: top; }
th { background: #f3f3f3; }
td.l, th.l { text-align: left; }
.jf { background: #fff3cd; }
.flip { background: #fde2e2; }
.badge { display: inline-block; padding: 0 0.4rem; border-radius: 0.3rem; font-size: 0.8rem; }
.badge.jf { background: #f0ad4e; color: #fff; }
.badge.flip { background: #d9534f; color: #fff; }
.note { color: #555; font-size: 0.85rem; }
"""
_AGG = ("runs", "D", "I", "E", "C", "all_correct")
# Process metrics shown per run (FML-bench runs), in table order.
_PROCESS = ("steps_run", "step_success_rate", "step_completion_rate", "exploration_spread", "auc_over_steps",
            "normalized_improvement", "test_status")


def _e(value: Any) -> str:
    # The report is a plain dict (possibly read back from changes.json): str() first, so no value can slip past.
    return html.escape(str(value), quote=True)


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "✓" if value else "✗"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}"
    return _e(value)


def _row(cells: list[str], cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<tr{attr}>" + "".join(cells) + "</tr>"


def _aggregates(report: dict[str, Any]) -> str:
    head = _row(["<th class=l>judge</th><th class=l>set</th>"] + [f"<th>{h}</th>" for h in _AGG])
    rows = [_row([f"<td class=l><b>new</b> {_e(report['fingerprint']['digest'])}</td>",
                  "<td class=l>all graded runs</td>"] + [f"<td>{_fmt(report['aggregates_after'].get(k))}</td>"
                                                         for k in _AGG])]
    for name, info in report["baselines"].items():
        for label, key in (("before, as recorded", "before_as_recorded"), ("before, valid verdicts only",
                           "before_valid_only"), ("after, the same runs", "after_same_runs")):
            values = info["aggregates"][key]
            rows.append(_row([f"<td class=l>{_e(name)}</td>", f"<td class=l>{label}</td>"]
                             + [f"<td>{_fmt(values.get(k))}</td>" for k in _AGG]))
    return f"<table>{head}{''.join(rows)}</table>"


def _runs(report: dict[str, Any]) -> str:
    names = list(report["baselines"])
    head = ["<th class=l>run</th><th class=l>task</th><th>D</th><th>I</th><th>E</th><th>C</th><th>All✓</th>"]
    for name in names:
        head.append(f"<th class=l colspan=2>{_e(name)}: D / I / C / All✓ (Δ)</th>")
    rows = [_row(head)]
    for run in report["runs"]:
        after = run["after"]
        cells = [f"<td class=l>{_e(run['run_id'])}</td>", f"<td class=l>{_fmt(run['task_id'])}</td>"]
        cells += [f"<td>{_fmt(after.get(k))}</td>" for k in ("D", "I", "E", "C", "all_correct")]
        marked = ""
        for name in names:
            entry = run["baselines"].get(name)
            if entry is None:
                cells.append("<td class=l colspan=2>–</td>")
                continue
            before = entry["before"]
            verdict = " / ".join(_fmt(before.get(k)) for k in ("D", "I", "C", "all_correct"))
            if entry.get("judge_failure"):
                marked = "jf"
                note = ('<span class="badge jf">upstream judge failure, not an agent failure</span> '
                        f'<span class=note>{_e(entry["judge_failure"])}</span>')
            else:
                deltas = ", ".join(f"{_e(k)} {v:+.1f}" for k, v in entry.get("deltas", {}).items() if v is not None)
                flips = ", ".join(f"{_e(k)}: {_fmt(b)}→{_fmt(a)}" for k, (b, a) in entry.get("flips", {}).items())
                if flips:
                    marked = marked or "flip"
                process = ", ".join(f"{_e(k)} {_fmt(c['before'])}→{_fmt(c['after'])}"
                                    for k, c in entry.get("process_changes", {}).items())
                note = (f'<span class="badge flip">flipped</span> {flips} ' if flips else "") + \
                    f"<span class=note>{deltas}</span>" + \
                    (f"<br><span class=note>process: {process}</span>" if process else "")
            cells.append(f"<td class=l>{verdict}</td><td class=l>{note}</td>")
        rows.append(_row(cells, marked))
    return f"<table>{''.join(rows)}</table>"


def _leaf_flips(report: dict[str, Any]) -> str:
    rows = []
    for run in report["runs"]:
        for name, entry in run["baselines"].items():
            for flip in entry.get("leaf_flips") or []:
                before_of = flip.get("before_of", "leaf")
                before = _fmt(flip["before"]) + (f" ({_fmt(flip['score_before'])})" if before_of == "leaf" else
                                                 f" <span class=note>({_e(before_of)})</span>")
                rows.append(_row([
                    f"<td class=l>{_e(run['run_id'])}<br><span class=note>grade "
                    f"{_e(flip.get('grade_id') or run.get('grade_id'))}</span></td>",
                    f"<td class=l>{_e(name)}</td>",
                    f"<td class=l>{_e(flip['leaf_id'])}</td>",
                    f"<td class=l>{_e(flip['stage'])}</td>",
                    f"<td class=l>{before}</td>",
                    f"<td class=l>{_fmt(flip['after'])} ({_fmt(flip['score_after'])})</td>",
                    f"<td class=l>{_e(flip.get('reason_after') or '')}</td>",
                    f"<td class=l>{_e(flip['target'][:140])}</td>",
                ]))
    if not rows:
        return "<p class=note>No leaf verdict flipped.</p>"
    head = _row([f"<th class=l>{h}</th>" for h in ("run and grade", "against", "leaf", "stage", "before", "after",
                                                   "why now", "target")])
    return f"<table>{head}{''.join(rows)}</table>"


def _process(report: dict[str, Any]) -> str:
    runs = [run for run in report["runs"] if run["after"].get("process")]
    if not runs:
        return "<p class=note>No graded run has process metrics (they come with FML-bench runs).</p>"
    head = _row(["<th class=l>run</th>"] + [f"<th>{_e(name)}</th>" for name in _PROCESS])
    rows = [_row([f"<td class=l>{_e(run['run_id'])}</td>"]
                 + [f"<td>{_fmt(run['after']['process'].get(name))}</td>" for name in _PROCESS]) for run in runs]
    return f"<table>{head}{''.join(rows)}</table>"


def _judge_failures(report: dict[str, Any]) -> str:
    # A changes.json written before the list existed has none: the badges in the runs table still show them.
    failed = report.get("judge_failure_runs") or []
    if not failed:
        return "<p class=note>No old verdict is an upstream judge failure.</p>"
    head = _row([f"<th class=l>{h}</th>" for h in ("run", "old verdict", "file", "why it says nothing of the agent")])
    rows = [_row([f"<td class=l>{_e(item['run_id'])}</td>", f"<td class=l>{_e(item['baseline'])}</td>",
                  f"<td class=l>{_e(item['file'])}</td>", f"<td class=l>{_e(item['reason'])}</td>"], "jf")
            for item in failed]
    return f"<table>{head}{''.join(rows)}</table>"


def _reference(report: dict[str, Any]) -> str:
    """Which reference the new grades used (a changes.json written before it was recorded has none)."""
    stated = report.get("reference")
    if not stated:
        return "Reference: not recorded in this report."
    if not stated["runs_with_reference"]:
        return f"Reference: none (no run was graded with a reference implementation; {_e(stated['runs_not_stated'])} " \
               "runs not stated)." if stated["runs_not_stated"] else \
               "Reference: none (no run was graded with a reference implementation)."
    return (f"Reference: used by <b>{_e(stated['runs_with_reference'])}</b> runs "
            f"({_e(stated['runs_without_reference'])} without), digest <code>{_e(stated['digest'])}</code>.")


def render_changes_html(report: dict[str, Any]) -> str:
    """The report as a standalone HTML page."""
    fp = report["fingerprint"]
    failures = report["judge_failures"]
    not_graded = "".join(
        f"<li>{_e(item['run_id'])}: {_e(item['error'])}</li>" for item in report["not_graded"]
    )
    notes = "".join(f"<li>{_e(n)}</li>" for n in report["notes"])
    thresholds = ", ".join(f"{_e(k)} = {v:g}" for k, v in report["thresholds"].items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>expjudge regrade: what changed</title>
<style>{_STYLE}</style></head><body>
<h1>What changed</h1>
<p>New judge: <b>{_e(fp.get('judge'))}</b> {_e(fp.get('model') or '')},
rubric {_e(fp.get('rubric_id'))}@{_e(fp.get('rubric_version'))},
fingerprint <code>{_e(fp['digest'])}</code>. Generated {_e(report['generated_at'])}.</p>
<p>{_reference(report)}</p>
<p>Thresholds: {thresholds}. Old verdicts flagged as <span class="badge jf">judge failure</span>:
<b>{_e(failures)}</b>.</p>
<ul class=note>{notes}</ul>
<h2>Aggregates before and after</h2>{_aggregates(report)}
<h2>Runs, old and new verdicts side by side</h2>{_runs(report)}
<h2>Old verdicts that are upstream judge failures</h2>{_judge_failures(report)}
<h2>Leaf verdicts that flipped</h2>{_leaf_flips(report)}
<h2>Process metrics</h2>{_process(report)}
<h2>Runs without a new grade</h2><ul>{not_graded or '<li>none</li>'}</ul>
</body></html>
"""
