"""What a run's own record offers to ground a conclusion: metric ~ value pairs read from its logs.

A conclusion may state numbers its run never printed. This module reads what the execution record holds
(`read_run_record`); `number_grounding.py` beside it says, per number a conclusion states, whether the
record grounds it, contradicts it or does not hold it.

What is read (`extract_log_metrics`): the execution logs, the run's output. The reproduce script is the run's
input (its numbers are settings, not results) and is not read; `Execution.artifacts` are file names only (their
contents are not handed in, and paths from a submission are never opened), so they ground no number. Forms:
    * "name: value", "name = value", "name=value", "name value" between delimiters (| , ; tab), "the mean JSD is
      0.08", "0.91 accuracy" (a label after its number when none precedes it);
    * JSON lines ({"val_acc": 0.91, "test": {"f1": 0.8}} -> "val_acc", "test f1");
    * tables whose header names the columns: markdown/pipe, CSV, TSV and space-aligned (pandas) rows, a row's
      label cells prefixed to the column's name ("ours accuracy").
Numbers are read by `numeric_claims.extract_numbers` (identifiers, dates, versions, paths are not numbers). Only
the first `HEAD_LINES` and the last `TAIL_LINES` lines that hold a digit are read (within the first `HEAD_BYTES`
and last `TAIL_BYTES`): results are printed at the end, settings at the start, and a log of any size costs at most
a second or so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from judge.models import Execution
from judge.text.numeric_claims import NumericMention, extract_numbers

HEAD_BYTES = 32 * 1024
TAIL_BYTES = 256 * 1024
HEAD_LINES = 100
TAIL_LINES = 1500
MAX_METRICS = 5000
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_WORD = re.compile(r"([a-z]+)(\d*)|\d+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "acc": ("accuracy",), "val": ("validation",), "valid": ("validation",), "err": ("error",),
    "ppl": ("perplexity",), "avg": ("mean",), "average": ("mean",), "prec": ("precision",), "rec": ("recall",),
    "auroc": ("auc",), "lr": ("learning", "rate"), "num": ("number",), "sec": ("second",), "secs": ("second",),
}
_STOP = frozenset((
    "the", "a", "an", "of", "is", "was", "are", "were", "for", "on", "in", "at", "to", "and", "or", "with", "by",
    "our", "we", "its", "their", "this", "that", "these", "those", "from", "as", "be", "been", "has", "have",
    "had", "it", "which", "reached", "reaches", "reach", "achieved", "achieves", "achieve", "got", "gets", "get",
    "than", "vs", "versus", "after", "before", "per", "over", "under", "about", "around", "approximately",
    "roughly", "nearly", "almost", "value", "values",
))
# Words that qualify a metric but do not name it: a name needs one other word to be matched by.
_GENERIC = frozenset((
    "score", "metric", "result", "final", "mean", "best", "overall", "total", "test", "validation", "train",
    "training", "eval", "evaluation", "std", "current", "run", "model", "dev", "last", "top",
))
# Counters and settings: a number under these names is no result of the experiment.
_COUNTERS = frozenset((
    "epoch", "step", "iteration", "iter", "batch", "seed", "elapsed", "eta", "gpu", "rank", "worker", "pid",
    "second", "size", "learning", "warmup", "patience", "decay", "dropout", "momentum",
))
_LINKING = re.compile(r"(?:\b(?:is|was|are|were|of|at|to|reached|reaches|achieved|achieves|equals|became|=|:)\s*)+$",
                      re.I)
_LABEL_DELIMITERS = re.compile(r"[|;,{}\[\]\t]")
_INNER_SEPARATOR = re.compile(r"[:=](?=\s*[A-Za-z])")
_RULE = re.compile(r"^[\s|:+=-]*[-=]{3,}[\s|:+=-]*$")
_SPACED = re.compile(r"\S\s{2,}\S")


def metric_tokens(text: str) -> frozenset[str]:
    """The words that name a metric, normalised: lower case, abbreviations expanded, plurals cut, filler dropped."""
    words: list[str] = []
    for match in _WORD.finditer(_CAMEL.sub(" ", text).lower()):
        letters, digits = match.group(1) or "", match.group(2) or ""
        word = letters if len(letters) >= 2 else letters + digits  # "tica0" -> "tica", "f1" stays "f1"
        if len(word) < 2 or word.isdigit() or word in _STOP:
            continue
        if word.endswith("ies") and len(word) > 4:
            word = word[:-3] + "y"
        elif word.endswith("s") and len(word) > 3 and not word.endswith("ss"):
            word = word[:-1]
        words.extend(w for w in _SYNONYMS.get(word, (word,)) if w not in _STOP)
    return frozenset(words)


@dataclass(frozen=True)
class LogMetric:
    """One value a log recorded, with the name it was recorded under.

    Attributes:
        name: The label as written ("val_acc", "ours accuracy"); "" for a bare number.
        tokens: `metric_tokens(name)`.
        value: The number as read.
        line: 1-based line of the log it is on.
        counter: Named as a counter or setting (epoch, seed, learning rate ...), not a result.
    """

    name: str
    tokens: frozenset[str]
    value: NumericMention
    line: int
    counter: bool

    @property
    def key(self) -> frozenset[str]:
        """The distinctive words of the name (empty when it has none)."""
        return self.tokens - _GENERIC

    def describe(self) -> str:
        """E.g. "val_acc = `0.91` (log line 12)" (the logged number verbatim, as code)."""
        return f"{self.name or 'a number'} = `{self.value.raw}` (log line {self.line})"


def value_mention(value: float) -> NumericMention:
    """A number read from no text (a JSON value, a difference of two values) as a plain mention."""
    return NumericMention(value=value, raw=f"{value:g}", is_percent=False, span=(0, 0))


def _flatten(data: Any, path: str = "") -> list[tuple[str, NumericMention]]:
    if isinstance(data, dict):
        return [pair for key, value in data.items() for pair in _flatten(value, f"{path} {key}".strip())]
    if isinstance(data, list):
        return [pair for value in data[:50] for pair in _flatten(value, path)]
    if isinstance(data, bool) or not isinstance(data, int | float | str):
        return []
    if isinstance(data, str):
        found = [m for m in extract_numbers(data) if not m.is_year]
        return [(path, found[0])] if len(found) == 1 else []
    return [(path, value_mention(float(data)))]


def _clean_label(text: str) -> str:
    text = _LINKING.sub("", text.replace('"', " ").replace("'", " ").replace("(", " ").replace(")", " ")).strip()
    return " ".join(text.strip(" :=-").split()[-5:])


def _generic_pairs(line: str) -> list[tuple[str, NumericMention]]:
    """Each number of a line with the label before it (after the last delimiter), else the words after it."""
    stripped = line.strip()
    if stripped[:1] in "{[":
        try:
            return _flatten(json.loads(stripped))
        except ValueError:
            pass
    mentions = [m for m in extract_numbers(line) if not m.is_year]
    pairs = []
    previous_end = 0
    for index, mention in enumerate(mentions):
        before = line[previous_end : mention.span[0]]
        cut = max((m.end() for m in _LABEL_DELIMITERS.finditer(before)), default=0)
        # "Done: throughput 1200": a colon or equals sign followed by words starts the label.
        cut = max((m.end() for m in _INNER_SEPARATOR.finditer(before, cut)), default=cut)
        label = _clean_label(before[cut:])
        if not re.search(r"[A-Za-z]", label):
            following = mentions[index + 1].span[0] if index + 1 < len(mentions) else len(line)
            after = line[mention.span[1] : following]
            after = after[: m.start()] if (m := _LABEL_DELIMITERS.search(after)) else after
            label = _clean_label(after)
        pairs.append((label, mention))
        previous_end = mention.span[1]
    return pairs


def _cells(line: str) -> tuple[str, list[str]] | None:
    """(delimiter kind, cells) of a line that may be a table row."""
    if line.count("|") >= 2:
        return "pipe", [c.strip() for c in line.strip().strip("|").split("|")]
    if "\t" in line:
        return "tab", [c.strip() for c in line.strip().split("\t")]
    if "," in line and ":" not in line and "=" not in line:
        return "comma", [c.strip() for c in line.split(",")]
    if _SPACED.search(line.strip()):
        return "space", re.split(r"\s{2,}", line.strip())
    return None


def _single_number(cell: str) -> NumericMention | None:
    found = [m for m in extract_numbers(cell) if not m.is_year]
    if len(found) == 1 and len(found[0].raw) >= len(cell.strip().strip("*")) - 2:
        return found[0]
    return None


def _is_header(cells: list[str]) -> bool:
    cheap = len(cells) >= 2 and all(
        c and len(c) <= 40 and re.search(r"[A-Za-z]", c) and not re.search(r"[:=]|^[-+]?\.?\d", c) for c in cells)
    return cheap and not any(_has_digit(c) and extract_numbers(c) for c in cells)


def _table_pairs(header: list[str], cells: list[str]) -> list[tuple[str, NumericMention]] | None:
    """A row's (name, value) pairs under `header`, aligned from the right (a leading index column is allowed)."""
    if not len(header) <= len(cells) <= len(header) + 1:
        return None
    values = {j: _single_number(cell) for j, cell in enumerate(cells)}
    if not any(values.values()):
        return None
    label = " ".join(c for j, c in enumerate(cells) if values[j] is None)
    offset = len(cells) - len(header)
    return [(f"{label} {header[j - offset]}".strip(), value)
            for j, value in values.items() if value is not None and j >= offset]


def _has_digit(line: str) -> bool:
    return any(ch.isdigit() for ch in line)


def _parts(logs: str) -> list[tuple[int, list[str]]]:
    """(first line number, lines) of the parts of a log that are read: up to `HEAD_LINES` lines holding a digit
    from its start and `TAIL_LINES` from its end (within `HEAD_BYTES` and `TAIL_BYTES`), the lines between them
    (table headers) included."""
    if len(logs) <= HEAD_BYTES + TAIL_BYTES:
        lines = _ANSI.sub("", logs).split("\n")
        head, tail = lines, lines
        tail_first = 1
    else:
        tail_start = logs.find("\n", len(logs) - TAIL_BYTES) + 1
        head = _ANSI.sub("", logs[:HEAD_BYTES]).split("\n")[:-1]  # its last line may be cut
        tail = _ANSI.sub("", logs[tail_start:]).split("\n")
        tail_first = logs.count("\n", 0, tail_start) + 1
    digits = [i for i, line in enumerate(head) if _has_digit(line)]
    head_end = digits[HEAD_LINES - 1] + 1 if len(digits) > HEAD_LINES else len(head)
    digits = [i for i, line in enumerate(tail) if _has_digit(line)]
    tail_begin = digits[-TAIL_LINES] if len(digits) > TAIL_LINES else 0
    if head is tail and head_end >= tail_begin:
        return [(1, head)]
    return [(1, head[:head_end]), (tail_first + tail_begin, tail[tail_begin:])]


def extract_log_metrics(logs: str) -> list[LogMetric]:
    """Every (name, value) a log records, in order (see the module docstring for the forms read).

    Args:
        logs: An execution log (ANSI colour codes and carriage-return progress bars are handled).

    Returns:
        At most `MAX_METRICS` metrics, the last ones kept when a log holds more.
    """
    metrics: list[LogMetric] = []
    for first_line, part in _parts(logs):
        header: tuple[str, list[str]] | None = None
        for offset, raw in enumerate(part):
            line = raw.rsplit("\r", 1)[-1] if "\r" in raw.rstrip("\r") else raw.rstrip("\r")
            cells = _cells(line)
            if _RULE.match(line):
                continue
            if cells and _is_header(cells[1]):
                header = cells
                continue
            pairs = None
            if header and cells and cells[0] == header[0]:
                pairs = _table_pairs(header[1], cells[1])
            if pairs is None:
                header = None
                pairs = _generic_pairs(line) if _has_digit(line) else []
            for name, value in pairs:
                tokens = metric_tokens(name)
                metrics.append(LogMetric(name=name, tokens=tokens, value=value, line=first_line + offset,
                                         counter=bool(tokens & _COUNTERS)))
    return metrics[-MAX_METRICS:]


@dataclass(frozen=True)
class RunRecord:
    """What an execution record offers to ground a conclusion.

    Attributes:
        present: An exit code or logs were handed in (artifact names alone are no record of a run).
        exit_code: The recorded exit code.
        metrics: The values its logs record.
        artifacts: The file names it lists.
    """

    present: bool
    exit_code: int | None = None
    metrics: tuple[LogMetric, ...] = ()
    artifacts: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for facts and rationales."""
        if not self.present:
            return "no execution record (no exit code, no logs)"
        code = "unknown" if self.exit_code is None else str(self.exit_code)
        return f"exit code {code}, {len(self.metrics)} logged values, {len(self.artifacts)} artifacts"


def read_run_record(execution: Execution | None) -> RunRecord:
    """The grounding view of a submission's execution record (None: no record)."""
    if execution is None or (execution.exit_code is None and not execution.logs.strip()):
        return RunRecord(present=False, artifacts=tuple(execution.artifacts) if execution else ())
    return RunRecord(present=True, exit_code=execution.exit_code, metrics=tuple(extract_log_metrics(execution.logs)),
                     artifacts=tuple(execution.artifacts))
