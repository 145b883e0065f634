"""Write the requirement check's learned decisions into the rubrics that carry them (training/
train_requirement_model.py fits them): expbench-v2 (expbench-v1 with both models), judgeeval-v1 (the text model on
its Code Development leaf) and expbench-v2-coder (both models; its coder model carried over).

Each rubric is plain data: what is written here is part of the rubric's hash, hence of every grade's fingerprint.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "rubrics" / "expbench-v1.yaml"
TARGET = ROOT / "rubrics" / "expbench-v2.yaml"
_ARGS_LINE = re.compile(r"^(\s*)args: \{pass_threshold: [^\n]*top_k: 3\}$", re.M)


def current_reference_model(path: Path) -> dict[str, Any]:
    """The requirement check's `reference_model` a written rubric holds now."""
    match = _CODER_ARGS.search(path.read_text(encoding="utf-8"))
    if match is None:
        raise SystemExit(f"no requirement check args line in {path}")
    model: dict[str, Any] = json.loads(match.group(2))["reference_model"]
    return model


def write_rubric(text_model: dict[str, Any], reference_model: dict[str, Any], floors: dict[str, float],
                 target: Path = TARGET) -> None:
    """expbench-v2: expbench-v1 with both models in the requirement check's arguments, written to `target`."""
    source = SOURCE.read_text(encoding="utf-8")
    match = _ARGS_LINE.search(source)
    if match is None:
        raise SystemExit("the requirement check's args line of expbench-v1.yaml changed: update _ARGS_LINE")
    args = {"pass_threshold": 0.5, "partial_threshold": 0.38, "explain_away_margin": 0.12, "file_bonus": 0.08,
            "top_k": 3, "reference_distinct_required": True, **floors, "text_model": text_model,
            "reference_model": reference_model}
    body = source[: match.start()] + f"{match.group(1)}args: {json.dumps(args)}" + source[match.end():]
    body = body.replace("# expbench-v1:", "# expbench-v2 (expbench-v1 with the requirement check's learned "
                        "decisions; written by training/train_requirement_model.py, do not edit by hand):", 1)
    body = re.sub(r"(?m)^id: expbench-v1$", "id: expbench-v2", body, count=1)
    body = re.sub(r'(?m)^version: "[^"]*"$', f'version: "{VERSIONS["expbench-v2"]}"', body, count=1)
    target.write_text(body, encoding="utf-8")


JUDGEEVAL = ROOT / "rubrics" / "judgeeval-v1.yaml"
_JUDGEEVAL_ARGS = re.compile(r"(?m)^(\s*)args: \{pass_threshold: 0\.5, partial_threshold: 0\.5,[^\n]*\}$|"
                             r'^(\s*)args: \{"pass_threshold": 0\.5, "partial_threshold": 0\.5,[^\n]*\}$')


def write_judgeeval(text_model: dict[str, Any], floors: dict[str, float], target: Path = JUDGEEVAL) -> None:
    """judgeeval-v1 with the same text model on its Code Development leaf (the first requirement check), so a
    PaperBench rubric is decided by the decision trained on both rubric styles, not by one cosine threshold."""
    source = target.read_text(encoding="utf-8")
    match = _JUDGEEVAL_ARGS.search(source)
    if match is None:
        raise SystemExit("the Code Development args line of judgeeval-v1.yaml changed: update _JUDGEEVAL_ARGS")
    indent = match.group(1) if match.group(1) is not None else match.group(2)
    args = {"pass_threshold": 0.5, "partial_threshold": 0.5, "explain_away_margin": 0.12, "file_bonus": 0.08,
            "top_k": 3, **floors, "text_model": text_model}
    body = source[: match.start()] + f"{indent}args: {json.dumps(args)}" + source[match.end():]
    body = re.sub(r'(?m)^version: "[^"]*"$', f'version: "{VERSIONS["judgeeval-v1"]}"', body, count=1)
    target.write_text(body, encoding="utf-8")


CODER = ROOT / "rubrics" / "expbench-v2-coder.yaml"
# The versions the rubrics written here get (a new model or a new rule is a new rubric version; issue 40's fifth
# round: with a reference, a leaf whose lines' own calls, values and lines are nowhere in the submission fails).
VERSIONS = {"expbench-v2": "2.5.0", "judgeeval-v1": "1.3.0", "expbench-v2-coder": "2.4.0"}
_CODER_ARGS = re.compile(r'(?m)^(\s*)args: (\{"pass_threshold": 0\.5, "partial_threshold": 0\.38,[^\n]*\})$')


def write_coder(text_model: dict[str, Any], reference_model: dict[str, Any], floors: dict[str, float],
                target: Path = CODER) -> None:
    """expbench-v2-coder with expbench-v2's new text and reference models and task gate. Its `coder_text_model`
    (text features and the code reader's answer, trained by bench/judging/coder_compare.py with the reader
    running) reads
    none of the features that changed, so it is carried over as it was, and its `trained_on` says so."""
    source = target.read_text(encoding="utf-8")
    match = _CODER_ARGS.search(source)
    if match is None:
        raise SystemExit("the requirement check's args line of expbench-v2-coder.yaml changed: update _CODER_ARGS")
    args = json.loads(match.group(2))
    args.update(floors)
    args["reference_distinct_required"] = True
    args["text_model"], args["reference_model"] = text_model, reference_model
    coder = args.get("coder_text_model")
    if coder is not None:
        coder["trained_on"]["carried_over_issue_40"] = (
            "not retrained: it reads none of the features issue 40 changed (txt_task_z left the text model; the "
            "abstracted features are new); text_model and reference_model are expbench-v2's, written by "
            "training/train_requirement_model.py")
    body = source[: match.start()] + f"{match.group(1)}args: {json.dumps(args)}" + source[match.end():]
    body = re.sub(r'(?m)^version: "[^"]*"$', f'version: "{VERSIONS["expbench-v2-coder"]}"', body, count=1)
    target.write_text(body, encoding="utf-8")
