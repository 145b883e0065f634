"""Execution records sorted into EXP-Bench's execution error taxonomy, mechanically.

EXP-Bench reports execution failures as environment or dependency configuration, script or file errors,
missing setup script and tensor operation errors. This module reads an `Execution` (exit code, logs,
reproduce script, time-out flag) and says which one applies, quoting the log lines that decided it.

Rules, in order:
    1. No record (None, or no exit code and blank logs, with no script handed in) -> "no_record".
    2. Timed out -> "timeout".
    3. A script handed in but blank -> "missing_setup_script".
    4. The decisive error: with a non-zero or unknown exit code, the last line of the log that matches any
       error pattern; with exit code 0, only the exception line of the last Python traceback (a run that
       swallowed a crash is not a success). The last one wins because it is the cause of the exit.
       Its class is the first of missing_setup_script, tensor_operation_error, environment_or_dependency,
       script_or_file_error whose patterns match that line.
    5. Exit code 0 with no decisive error -> "success".
    6. No recognised error after a non-zero exit: no script handed in -> "missing_setup_script"; exit code
       126/127 -> "script_or_file_error"; else (also when the exit code is unknown) "unknown_failure".
"timeout" and "unknown_failure" have no EXP-Bench label; their `taxonomy_label` is None like "success".
Only the last `TAIL_BYTES` of a log are scanned, so logs of many megabytes cost the same as small ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from judge.models import Execution

ExecutionClass = Literal[
    "success",
    "environment_or_dependency",
    "script_or_file_error",
    "missing_setup_script",
    "tensor_operation_error",
    "timeout",
    "unknown_failure",
    "no_record",
]

TAXONOMY_LABELS: dict[ExecutionClass, str] = {
    "environment_or_dependency": "environment or dependency configuration",
    "script_or_file_error": "script or file errors",
    "missing_setup_script": "missing setup script",
    "tensor_operation_error": "tensor operation errors",
}
TAIL_BYTES = 256 * 1024
MAX_EVIDENCE_LINES = 5

# Tools whose absence is a missing installation, not a broken script.
_ENV_TOOLS = (
    r"pip3?|python[\d.]*|conda|mamba|micromamba|nvidia-smi|nvcc|torchrun|accelerate|deepspeed|jupyter|pytest"
    r"|wandb|huggingface-cli|tensorboard|git-lfs|poetry|uv|virtualenv|java|gcc|g\+\+|make|cmake|ninja|Rscript"
)
_ALTERNATIVES: list[tuple[ExecutionClass, tuple[str, ...]]] = [
    (
        "missing_setup_script",
        (
            r"reproduce[\w-]*\.sh\W.{0,40}(?:No such file|not found|cannot open|can't open)",
            r"(?:No such file|not found|cannot open|can't open).{0,80}reproduce[\w-]*\.sh",
        ),
    ),
    (
        "tensor_operation_error",
        (
            r"size mismatch|shape mismatch|invalid shape|view size is not compatible|mat1 and mat2",
            r"shapes? .{0,60}(?:cannot be multiplied|mismatch|invalid|incompatible|do(?:es)? not match)",
            r"must match the size of tensor|size of tensor a|sizes of tensors must match",
            r"dimension out of range|dimension specified as",
            r"expected (?:input|target|scalar type|all tensors|\d+D|.{0,40} dimensions?)",
            r"out of memory|OutOfMemoryError|could not be broadcast|not broadcastable",
            r"(?:error|expected|mismatch).{0,80}dtype",
            r"dtype.{0,80}(?:mismatch|expected|but got|not supported)",
            r"index out of range in self|device-side assert|CUBLAS_STATUS|CUDNN_STATUS|cuDNN error",
            r"Given groups=|einsum\(\)|Target size .{0,40} must be the same",
        ),
    ),
    (
        "environment_or_dependency",
        (
            r"ModuleNotFoundError|ImportError|No module named|cannot import name|DLL load failed",
            r"Could not find a version that satisfies|No matching distribution|ResolutionImpossible",
            r"conflicting dependencies|dependency conflict|VersionConflict|incompatible version",
            r"requires Python|PackagesNotFoundError|UnsatisfiableError|PackageNotFoundError",
            r"Failed building wheel|subprocess-exited-with-error|pip3? install .{0,60}failed",
            r"externally-managed-environment|CondaError|EnvironmentNameNotFound",
            r"environment .{0,40} does not exist",
            r"CUDA driver version is insufficient|Found no NVIDIA driver|NVIDIA driver .{0,40}too old",
            r"Torch not compiled with CUDA|No CUDA GPUs are available|no kernel image is available",
            r"libcu\w*\.so|cannot open shared object file|undefined symbol|GLIBC\w*.{0,20}not found",
            rf"(?:^|[ \t:])(?:{_ENV_TOOLS}): (?:command )?not found",
        ),
    ),
    (
        "script_or_file_error",
        (
            r"FileNotFoundError|No such file or directory|IsADirectoryError|NotADirectoryError",
            r"PermissionError|Permission denied|SyntaxError|IndentationError|TabError",
            r"NameError|UnboundLocalError|AttributeError|KeyError|TypeError|ValueError|IndexError",
            r"AssertionError|JSONDecodeError|ZeroDivisionError|RecursionError|NotImplementedError",
            r"can't open file|cannot access|syntax error|unexpected EOF|unexpected token",
            r"bad substitution|unbound variable|command not found|: not found$|Is a directory",
            r"Not a directory|Errno 2|bad interpreter|cannot execute",
            r"Traceback \(most recent call last\)|(?:^|[ \t])\w+(?:Error|Exception):",
        ),
    ),
]
_PATTERNS = [(error_class, re.compile("|".join(parts), re.I)) for error_class, parts in _ALTERNATIVES]
# Patterns never cross a newline ("." and [ \t] only), so a match's start lies on the line it decides.
_ANY_ERROR = re.compile("|".join(f"(?:{pattern.pattern})" for _, pattern in _PATTERNS), re.I | re.M)
_TRACEBACK = "Traceback (most recent call last):"
# Every pattern above contains one of these (lowercase) words: a cheap test before the full patterns.
_KEYWORDS = (
    *("error", "exception", "traceback", "not found", "no such file", "reproduce", "mismatch", "shape"),
    *("size mismatch", "view size", "size of tensor", "sizes of tensors", "target size", "mat1", "dimension"),
    *("expected", "memory", "broadcast", "dtype", "out of range", "device-side assert", "cublas", "cudnn"),
    *(
        "given groups",
        "einsum",
        "no module",
        "cannot import",
        "dll load",
        "a version that",
        "versionconflict",
    ),
    *("incompatible version", "matching distribution", "resolutionimpossible", "conflict", "requires python"),
    *("wheel", "failed", "externally-managed", "environmentnamenotfound", "does not exist", "driver"),
    *(
        "compiled with cuda",
        "cuda gpus",
        "kernel image",
        "libcu",
        "shared object",
        "undefined symbol",
        "glibc",
    ),
    *("permission", "can't open", "cannot access", "syntax", "unexpected", "bad substitution", "unbound"),
    *("is a directory", "not a directory", "errno", "bad interpreter", "cannot execute"),
)


@dataclass(frozen=True)
class LogClassification:
    """What an execution record says about the run.

    Attributes:
        error_class: One of `ExecutionClass`.
        exit_code: The recorded exit code (None when unknown).
        evidence_lines: Up to five log lines, verbatim, that decided the class (context, then the error).
        taxonomy_label: EXP-Bench's label for the class, None for "success" and "no_record".
    """

    error_class: ExecutionClass
    exit_code: int | None
    evidence_lines: list[str] = field(default_factory=list)
    taxonomy_label: str | None = None


def _tail(logs: str) -> str:
    if len(logs) <= TAIL_BYTES:
        return logs
    tail = logs[-TAIL_BYTES:]
    newline = tail.find("\n")
    return tail[newline + 1 :] if newline != -1 else tail


def _class_of_line(line: str) -> ExecutionClass:
    for error_class, pattern in _PATTERNS:
        if pattern.search(line):
            return error_class
    return "unknown_failure"


def _last_traceback_exception(text: str) -> tuple[int, int] | None:
    """Span of the exception line that ends the last Python traceback, if any."""
    index = text.rfind(_TRACEBACK)
    if index == -1:
        return None
    position = text.find("\n", index)
    while position != -1:
        start = position + 1
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        line = text[start:end].rstrip("\r")
        if line.strip() and not line.startswith((" ", "\t")):
            return start, start + len(line)
        position = end if end < len(text) else -1
    return None


def _last_error(text: str) -> tuple[int, int] | None:
    """Span of the last log line matching any error pattern (a traceback header alone does not decide).

    Lines are read from the end, and only those holding a keyword go to the (costly) full patterns.
    """
    end = len(text)
    while end >= 0:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end].rstrip("\r")
        lowered = line.lower()
        if (
            any(keyword in lowered for keyword in _KEYWORDS)
            and _ANY_ERROR.search(line)
            and line.strip() != _TRACEBACK
        ):
            return start, start + len(line)
        end = start - 1
    return None


def _evidence(text: str, span: tuple[int, int]) -> list[str]:
    """The deciding line, preceded by the traceback frame lines right above it (at most five lines)."""
    context: list[str] = []
    end = span[0] - 1
    while end > 0 and len(context) < MAX_EVIDENCE_LINES - 1:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end].rstrip("\r")
        if not line.strip() or not line.startswith((" ", "\t")):
            break
        context.insert(0, line)
        end = start - 1
    return [*context, text[span[0] : span[1]]]


def _last_lines(text: str, count: int = 3) -> list[str]:
    lines: list[str] = []
    end = len(text)
    while end > 0 and len(lines) < count:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end].rstrip("\r")
        if line.strip():
            lines.insert(0, line)
        end = start - 1
    return lines


def _result(
    error_class: ExecutionClass, execution: Execution | None, evidence: list[str] | None = None
) -> LogClassification:
    return LogClassification(
        error_class=error_class,
        exit_code=execution.exit_code if execution is not None else None,
        evidence_lines=(evidence or [])[-MAX_EVIDENCE_LINES:],
        taxonomy_label=TAXONOMY_LABELS.get(error_class),
    )


def classify_execution(execution: Execution | None) -> LogClassification:
    """Classify an execution record into EXP-Bench's execution error taxonomy.

    Args:
        execution: The run record, or None when the submission has none.

    Returns:
        The class, the exit code, the log lines that decided it, and EXP-Bench's label (see the module
        docstring for the rules).
    """
    if execution is None:
        return _result("no_record", None)
    logs = execution.logs or ""
    script = execution.reproduce_script
    script_blank = script is not None and not script.strip()
    if execution.timed_out:
        return _result("timeout", execution, _last_lines(_tail(logs)))
    if execution.exit_code is None and not logs.strip():
        return _result("missing_setup_script" if script_blank else "no_record", execution)
    if script_blank:
        return _result("missing_setup_script", execution, _last_lines(_tail(logs)))
    text = _tail(logs)
    if execution.exit_code == 0:
        span = _last_traceback_exception(text)
        if span is None:
            return _result("success", execution, _last_lines(text, 1))
    else:
        span = _last_error(text)
    if span is not None:
        line = text[span[0] : span[1]]
        return _result(_class_of_line(line), execution, _evidence(text, span))
    if script is None and execution.exit_code is not None:
        return _result("missing_setup_script", execution, _last_lines(text))
    if execution.exit_code in (126, 127):
        return _result("script_or_file_error", execution, _last_lines(text))
    return _result("unknown_failure", execution, _last_lines(text))
