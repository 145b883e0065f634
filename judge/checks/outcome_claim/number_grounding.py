"""Numbers a conclusion states, checked against the values its run's logs record (conclusion_grounding.py).

How a stated number is grounded (`ground_number`): its metric words are the sentence's words between its
neighbouring numbers (the local window), then the whole sentence. A log metric is *named* by those words when
every distinctive word of its name (not "test", "final", "mean" ...) is among them, abbreviations read (acc ->
accuracy, val -> validation). Grounded: a named metric (local, then sentence-wide), else any logged result value,
agrees within the tolerance rule of `compare_numbers` (the stated number's hedge or bound honoured). Contradicted:
result metrics named locally exist (or, failing those, named by the sentence with a word in the local window:
"a JSD of 0.08, versus 0.05 for MD" names md_jsd for 0.05) and none of their values agrees. A change ("improves by
5%", "3x faster") is compared with differences and ratios of the values of metrics the sentence shares a word with,
and is never read as contradicted. Counters and settings (epoch, step, seed, learning rate, batch size) ground
only by name and never contradict.

Also which claims need a measured result at all (`needs_measured_result`), and which numbers are settings of the
set-up rather than results (`is_setting`: "replicate 100 ns simulations", "5 seeds").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from judge.checks.outcome_claim.conclusion_grounding import LogMetric, RunRecord, metric_tokens, value_mention
from judge.text.numeric_claims import NumericCheck, NumericMention, extract_numbers, honours

GroundingStatus = Literal["grounded", "contradicted", "not_found"]
_MAX_DERIVED = 60
_CHANGE_BEFORE = re.compile(r"\b(?:by|of)\s+(?:about\s+|around\s+|roughly\s+|approximately\s+|~\s*|nearly\s+"
                            r"|almost\s+|over\s+|up\s+to\s+)?$", re.I)
_CHANGE_WORDS = re.compile(r"\b(?:improv|increas|decreas|reduc|gain|drop|boost|lower|rais|cut|declin|grow|grew"
                           r"|fell|rose|outperform|exceed|beat|speed|accelerat|slow)\w*", re.I)
_CHANGE_AFTER = re.compile(r"^\s*(?:points?\b|pp\b|p\.p\.|percentage\s+points?|x\b|×|times\b|-?fold\b|faster"
                           r"|slower|higher|lower|more\b|less\b|fewer|better|worse|improvement|gain|increase|decrease"
                           r"|reduction|drop|speed-?up|relative)", re.I)
_NOT_NOUNS = frozenset(("of", "out", "in", "to", "and", "or", "vs", "versus", "than", "points", "point", "pp",
                        "times", "fold", "x", "percent", "higher", "lower", "more", "less", "fewer", "better", "worse"))
_LINKED = re.compile(r"(?:\b(?:of|is|was|were|are|to|reaches|reached|achieves|achieved|at|by|from|scored|scores)|[=:])"
                     r"\s*$", re.I)
_COMPARISON = re.compile(
    r"\b(?:than|versus|vs\.?|compared\s+(?:to|with)|relative\s+to|in\s+comparison|outperform\w*|underperform\w*"
    r"|surpass\w*|exceed\w*|beats?|better|worse|higher|lower|greater|smaller|larger|fewer|faster|slower"
    r"|increas\w*|decreas\w*|reduc\w*|improv\w*|degrad\w*|gains?|drops?|declin\w*|boost\w*|match\w*|similar\w*"
    r"|comparable|close\s+to|closely|near|consistent\s+with|align\w*|differ\w*|deviat\w*|diverg\w*|converg\w*"
    r"|correlat\w*|significant\w*|trade-?off|gap|advantage|superior|inferior|on\s+par|equivalent|same\s+as"
    r"|accuracy|error\s+rate|f1|auc|bleu|rouge|perplexity|precision|recall|divergence|jsd|mse|mae|rmse|latency"
    r"|throughput|speed-?up|runtime)\b",
    re.I,
)


def needs_measured_result(claim: str) -> str | None:
    """Why a claim can only be supported by a measured result (a comparison, or its numbers), or None."""
    match = _COMPARISON.search(claim)
    if match:
        return f"compares ('{match.group(0)}')"
    numbers = [m for m in extract_numbers(claim) if not m.is_year]
    return f"states {numbers[0].raw}" if numbers else None


def is_setting(sentence: str, mention: NumericMention) -> bool:
    """Whether a number of `sentence` reads as a count or setting of the set-up ("100 ns MD", "5 seeds"), not a
    result: a plain integer followed by a noun, with no linking word before it ("accuracy of 91" is a result)."""
    if (mention.raw.strip().lstrip("+-−").replace(",", "").isdigit() is False or mention.is_percent
            or mention.qualifier or mention.high is not None or mention.denominator):
        return False
    follower = re.match(r"\s*([A-Za-z]+)", sentence[mention.span[1] :])
    if follower is None or follower.group(1).lower() in _NOT_NOUNS:
        return False
    return not _LINKED.search(sentence[max(0, mention.span[0] - 20) : mention.span[0]])


def without_unmet_settings(check: NumericCheck, claim: str) -> NumericCheck:
    """`check` without the claim's set-up numbers the answer does not restate.

    "JSD near that of replicate 100 ns simulations (~0.1)" is about the JSD: a conclusion that leaves the
    simulations' length out does not disagree with the claim, and one whose only numbers are such settings
    has no numbers to report.
    """
    if check.status not in ("mismatch", "answer_has_no_numbers"):
        return check
    kept = [p for p in check.pairs if p.satisfied or not is_setting(claim, p.claim)]
    if len(kept) == len(check.pairs):
        return check
    if not kept:
        return NumericCheck(status="claim_has_no_numbers")
    if check.status == "answer_has_no_numbers":
        return NumericCheck(status=check.status, details=[p.detail for p in kept], pairs=kept)
    status: Literal["match", "mismatch"] = "match" if all(p.satisfied for p in kept) else "mismatch"
    return NumericCheck(status=status, details=[p.detail for p in kept], pairs=kept)


@dataclass(frozen=True)
class NumberGrounding:
    """What the execution record says of one number a conclusion states.

    Attributes:
        stated: The number as the conclusion wrote it.
        status: "grounded", "contradicted" or "not_found".
        metric: The log value that grounds or contradicts it (None when not found or derived).
        detail: One human-readable line.
    """

    stated: NumericMention
    status: GroundingStatus
    metric: LogMetric | None
    detail: str


def _is_change(sentence: str, mention: NumericMention) -> bool:
    start, end = mention.span
    before = sentence[max(0, start - 60) : start]
    if mention.raw.rstrip().endswith(("x", "×")) or _CHANGE_AFTER.match(sentence[end : end + 30]):
        return True
    return bool(_CHANGE_BEFORE.search(before) and _CHANGE_WORDS.search(before))


def _named(metrics: tuple[LogMetric, ...], words: frozenset[str]) -> list[LogMetric]:
    return [m for m in metrics if m.key and m.key <= words]


def _derived(metrics: list[LogMetric]) -> list[NumericMention]:
    values = list(dict.fromkeys(m.value.value for m in metrics if not m.counter))[-_MAX_DERIVED:]
    out = []
    for a in values:
        for b in values:
            if a != b:
                out += [value_mention(abs(a - b)), value_mention(100 * abs(a - b))]  # also in points of a percentage
                if b:
                    out += [value_mention(abs(a - b) / abs(b)), value_mention(a / b)]
    return out


def ground_number(stated: NumericMention, sentence: str, record: RunRecord, *, rel_tol: float,
                  abs_tol: float) -> NumberGrounding:
    """Whether `record`'s logs ground, contradict or do not hold `stated` (a number of `sentence`).

    Args:
        stated: A number of `sentence` (its span is into `sentence`).
        sentence: The conclusion sentence stating it.
        record: The run's record.
        rel_tol: Relative tolerance (the rubric's).
        abs_tol: Absolute tolerance floor (the rubric's).
    """
    def agrees(metric: LogMetric) -> bool:
        return honours(stated, metric.value, rel_tol, abs_tol)

    if not record.metrics:
        return NumberGrounding(stated, "not_found", None, f"`{stated.raw}`: the logs record no values")
    numbers = [m for m in extract_numbers(sentence) if not m.is_year]
    before = max((m.span[1] for m in numbers if m.span[1] <= stated.span[0]), default=0)
    after = min((m.span[0] for m in numbers if m.span[0] >= stated.span[1]), default=len(sentence))
    window, words = metric_tokens(sentence[before:after]), metric_tokens(sentence)
    local, wide = _named(record.metrics, window), _named(record.metrics, words)
    if _is_change(sentence, stated):
        pool = [m for m in record.metrics if not m.counter and m.key & words]
        if len({m.value.value for m in pool}) < 2:  # the other side of the change is named otherwise ("ours")
            pool = [m for m in record.metrics if not m.counter]
        found = any(honours(stated, d, rel_tol, abs_tol) for d in _derived(pool))
        detail = "a change the logged values give" if found else "a change no two logged values give"
        return NumberGrounding(stated, "grounded" if found else "not_found", None, f"`{stated.raw}`: {detail}")
    for group in (local, wide):
        hit = next((m for m in reversed(group) if agrees(m)), None)
        if hit is not None:
            return NumberGrounding(stated, "grounded", hit, f"`{stated.raw}`: logged as {hit.describe()}")
    # "a JSD of 0.08, versus 0.05 for MD": md_jsd is named by the sentence and partly by the number's own words.
    results = [m for m in local if not m.counter] or [m for m in wide if not m.counter and m.key & window]
    if results:
        closest = min(results, key=lambda m: abs(m.value.value - stated.value))
        return NumberGrounding(stated, "contradicted", closest, f"`{stated.raw}`: the log says {closest.describe()}")
    hit = next((m for m in reversed(record.metrics) if not m.counter and agrees(m)), None)
    if hit is not None:
        return NumberGrounding(stated, "grounded", hit, f"`{stated.raw}`: logged as {hit.describe()}")
    return NumberGrounding(stated, "not_found", None, f"`{stated.raw}`: not in the logs")


def ground_sentence(sentence: str, required: list[NumericMention], record: RunRecord, *, rel_tol: float,
                    abs_tol: float) -> tuple[list[NumberGrounding], list[NumberGrounding]]:
    """(groundings of `required`, contradictions among the sentence's other numbers).

    `required` are the numbers that carry the claim: each must be grounded unless it is a setting of the set-up
    (`is_setting`, "the 100 ns simulations"); any other number of the sentence counts only when the logs contradict
    it.
    """
    spans = {m.span for m in required}
    needed = [ground_number(m, sentence, record, rel_tol=rel_tol, abs_tol=abs_tol) for m in required
              if not is_setting(sentence, m)]
    others = [ground_number(m, sentence, record, rel_tol=rel_tol, abs_tol=abs_tol)
              for m in extract_numbers(sentence) if not m.is_year and m.span not in spans] if record.metrics else []
    return needed, [g for g in others if g.status == "contradicted"]
