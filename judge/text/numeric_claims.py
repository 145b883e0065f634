"""Numbers in free text and a tolerance check of a claim's numbers against an answer's.

The conclusion stage compares claims of an expected outcome ("JSD near replicate MD (~0.1 or lower)") with
what an agent wrote. This module does the mechanical part: find the numbers, with their hedges ("~",
"at most", "or higher"), and say whether each number of the claim is honoured by some number of the answer.

Extraction rules (`extract_numbers`):
    * Forms: 0.1, .5, 1e-3, 1,000, -3 / −3, 12%, 12 percent, 10x, 100k (x1000), 7B (x1e9), 78/100 (a ratio).
    * Ranges are one mention with `high` set: 0.1-0.2, 52–62% (the % applies to both ends), 10 to 20,
      between 10 and 20. "from 0.5 to 0.7" is a change, not a range: two mentions. "0.67 ± 0.01" is one
      mention with `plus_minus` set.
    * Ignored: numbers inside identifiers, versions, paths, hashes and dates (TICA-0, step_3, v1.2.3,
      file2.py, A100, /workspace/x.py:10-20, 749f9d71-3feb), enumerators (Step 4:, Table 2, lines 3-5, #2) and
      list markers at a line start ("1. ").
    * Years (1900-2099 integers used as years) are kept with `is_year=True`; `compare_numbers` ignores them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Qualifier = Literal["approx", "upper_bound", "lower_bound"]
CheckStatus = Literal["match", "mismatch", "claim_has_no_numbers", "answer_has_no_numbers"]

_NUM = r"(?:\d{1,3}(?:,\d{3})+(?![\d,])|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?"
_PCT = r"\s?%|\s?(?:percent|per\s?cent)\b"
_MAG = r"(?:[x×]|[kK]|M|B|bn)(?![A-Za-z0-9])"
_MENTION = re.compile(
    rf"(?P<s1>[-−+])?(?P<n1>{_NUM})(?:/(?P<den>\d+(?:\.\d+)?)(?![\d./]))?(?P<p1>{_PCT})?(?P<m1>{_MAG})?"
    rf"(?:(?P<sep>\s*[-–—]\s*|\s+to\s+|\s+and\s+)(?P<s2>[-−])?(?P<n2>{_NUM})(?P<p2>{_PCT})?(?P<m2>{_MAG})?)?"
    rf"(?:\s*(?:±|\+/-|\+-)\s*(?P<pm>{_NUM})(?P<pmp>{_PCT})?)?"
)
_MASKED = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b")
_ENUMERATOR = re.compile(
    r"(?i)(?:\b(?:step|phase|stage|figure|fig\.|table|tab\.|section|sec\.|eq\.|equation|appendix|chapter"
    r"|lines?|item|part|task|question|iteration|iter|version|ver\.|no\.|partition|index|id|rq|exp"
    r"|experiment|hypothesis|round|trial|group|level|layer|gpu|cuda|cell|row|column|col\.|page|pp?\.)|[#§])\s*$"
)
# "(x.py:44-46, 104-106)", "lines 3-5, 9-12": further line numbers after a code reference.
_REFERENCE_CONTINUATION = re.compile(
    r"(?:\.[A-Za-z]{1,6}:|\blines?\s+)\d+(?:[-–]\d+)?(?:\s*(?:,|and)\s*\d+(?:[-–]\d+)?)*\s*(?:,|and)\s*$",
    re.I,
)
_LIST_MARKER = re.compile(r"^\s*(?:[-*>#]+\s*)?$")
_PATH_TOKEN = re.compile(
    r"/[^\s]*[A-Za-z]|[A-Za-z][^\s]*/|\\|://|@|\d+\.\d+\.\d+|[A-Za-z_][\w-]*\.[A-Za-z]{1,6}(?::|$)"
    r"|(?=[0-9a-f-]*[a-f])(?=[0-9a-f-]*\d)[0-9a-f]{7,}|(?=[0-9a-f-]*[a-f])[0-9a-f]{4,}-[0-9a-f]{4,}"
)
_TOKEN_TRIM = "()[]{}<>\"'`,;:!?*"
_MAGNITUDE = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "bn": 1e9}
_WORD_BEFORE = r"(?<![A-Za-z])"
_APPROX_PRE = re.compile(
    r"(?:~=?|≈|∼|" + _WORD_BEFORE + r"(?:about|around|roughly|approximately|approx\.?|circa|ca\.|nearly"
    r"|almost|close\s+to|near|on\s+the\s+order\s+of|in\s+the\s+(?:range|region|vicinity)\s+of))\s*\(?\s*$",
    re.I,
)
_UPPER_PRE = re.compile(
    r"(?:<=|≤|⩽|=<|<|" + _WORD_BEFORE + r"(?:less\s+than|lower\s+than|smaller\s+than|fewer\s+than|below"
    r"|under|beneath|at\s+most|no\s+(?:more|greater|higher)\s+than|not\s+(?:more|greater|higher)\s+than"
    r"|up\s+to|not\s+exceeding|(?:does|do|should|must|will)\s+not\s+exceed|(?:a\s+)?max(?:imum|\.)?\s+of))"
    r"\s*$",
    re.I,
)
_LOWER_PRE = re.compile(
    r"(?:>=|≥|⩾|=>|>|" + _WORD_BEFORE + r"(?:more\s+than|greater\s+than|higher\s+than|larger\s+than|above"
    r"|over|at\s+least|no\s+(?:less|fewer|lower)\s+than|not\s+(?:less|fewer|lower)\s+than|exceeding|exceeds?"
    r"|in\s+excess\s+of|(?:a\s+)?min(?:imum|\.)?\s+of))\s*$",
    re.I,
)
_UPPER_SUF = re.compile(
    r"^\s*(?:[A-Za-z]{1,6}\s+)?(?:or|and)\s+(?:lower|less|below|fewer|smaller|under)\b", re.I
)
_LOWER_SUF = re.compile(
    r"^(?:\+(?![\d+])|\s*(?:[A-Za-z]{1,6}\s+)?(?:or|and)\s+(?:higher|more|above|greater|larger|over|beyond)\b)",
    re.I,
)
_APPROX_SUF = re.compile(r"^(?:\s*or\s+so\b|-?ish\b)", re.I)
# Words that may follow a year ("in 2024 we", "the 2023 release"); any other lowercase word after a 4-digit
# number makes it a count ("2000 samples").
_YEAR_FOLLOWERS = frozenset(
    ("and", "or", "the", "we", "to", "in", "at", "on", "for", "with", "was", "were", "is", "a", "an", "by")
) | frozenset(
    ("paper", "papers", "study", "work", "version", "edition", "release", "conference", "benchmark")
)
_QUALIFIER_LABEL = {"approx": "approx", "upper_bound": "upper bound", "lower_bound": "lower bound"}


@dataclass(frozen=True)
class NumericMention:
    """One number (or range) found in a text.

    Attributes:
        value: The number, or the low end of a range; magnitudes (100k, 7B) applied.
        raw: The text it was read from, verbatim.
        is_percent: Written with %, "percent" or "per cent".
        span: (start, end) offsets of `raw` in the text.
        qualifier: "approx", "upper_bound", "lower_bound" or None (a plain number).
        approximate: An approximation marker was seen, also when a bound is the qualifier ("~0.1 or lower").
        is_year: Reads as a calendar year.
        high: High end of a range ("0.1-0.2"), else None.
        plus_minus: Half-width given with ± ("0.67 ± 0.01"), else None.
        denominator: For a ratio "78/100", the 100; `value` is then 78.
    """

    value: float
    raw: str
    is_percent: bool
    span: tuple[int, int]
    qualifier: Qualifier | None = None
    approximate: bool = False
    is_year: bool = False
    high: float | None = None
    plus_minus: float | None = None
    denominator: float | None = None

    @property
    def interval(self) -> tuple[float, float]:
        """The values the mention stands for: a point, a range, or value ± plus_minus."""
        low, high = self.value, self.value if self.high is None else self.high
        spread = self.plus_minus or 0.0
        return min(low, high) - spread, max(low, high) + spread

    def describe(self) -> str:
        """Short form for messages: "0.1", "52–62%", "78/100", "0.67±0.01"."""
        text = f"{self.value:g}" + (f"/{self.denominator:g}" if self.denominator else "")
        if self.high is not None:
            text += f"–{self.high:g}"
        if self.plus_minus is not None:
            text += f"±{self.plus_minus:g}"
        return text + ("%" if self.is_percent else "")


@dataclass(frozen=True)
class NumberPair:
    """One claim number with the answer number that honours it (or the closest one when none does)."""

    claim: NumericMention
    answer: NumericMention | None
    satisfied: bool
    detail: str


@dataclass(frozen=True)
class NumericCheck:
    """Outcome of `compare_numbers`: a status, one human-readable line per claim number, and the pairs."""

    status: CheckStatus
    details: list[str] = field(default_factory=list)
    pairs: list[NumberPair] = field(default_factory=list)


def _to_float(text: str, sign: str | None = None) -> float:
    value = float(text.replace(",", ""))
    return -value if sign in ("-", "−") else value


def _token_at(text: str, start: int, end: int) -> str:
    left = start
    while left > 0 and not text[left - 1].isspace():
        left -= 1
    right = end
    while right < len(text) and not text[right].isspace():
        right += 1
    return text[left:right].strip(_TOKEN_TRIM).rstrip(".")


def _is_identifier_part(text: str, start: int, end: int, line_start: int) -> bool:
    before = text[start - 1] if start > 0 else " "
    joined = before in "-+" and start > 1 and (text[start - 2].isalnum() or text[start - 2] == "+")
    if before.isalpha() or before in "_#.\\" or joined:  # "TICA-0", "C++11", "step_3", "#2"
        return True
    if re.match(r"[A-Za-z]+\d|_|\.[A-Za-z]", text[end : end + 12]):
        return True
    if _PATH_TOKEN.search(_token_at(text, start, end)):
        return True
    prefix = text[line_start:start]
    if _ENUMERATOR.search(prefix[-24:]) or _REFERENCE_CONTINUATION.search(prefix[-200:]):
        return True
    # "1. Item" / "2) Item" at a line start is a list marker, not a quantity.
    return bool(_LIST_MARKER.match(prefix) and re.match(r"[.)](?:\s|$)", text[end : end + 2]))


def _qualifier(text: str, start: int, end: int) -> tuple[Qualifier | None, bool]:
    prefix, suffix = text[max(0, start - 40) : start], text[end : end + 30]
    approximate = bool(_APPROX_SUF.match(suffix))
    bound: Qualifier | None = None
    for _ in range(2):  # "< ~0.1" and "about at most 3": a bound and an approximation may stack
        if match := _APPROX_PRE.search(prefix):
            approximate, prefix = True, prefix[: match.start()]
        elif match := _UPPER_PRE.search(prefix):
            bound, prefix = bound or "upper_bound", prefix[: match.start()]
        elif match := _LOWER_PRE.search(prefix):
            bound, prefix = bound or "lower_bound", prefix[: match.start()]
    if bound is None and _UPPER_SUF.match(suffix):
        bound = "upper_bound"
    elif bound is None and _LOWER_SUF.match(suffix):
        bound = "lower_bound"
    return bound or ("approx" if approximate else None), approximate


def _looks_like_year(text: str, match: re.Match[str], value: float) -> bool:
    number = match.group("n1")
    if not (len(number) == 4 and number.isdigit() and 1900 <= value <= 2099):
        return False
    if any(match.group(g) for g in ("s1", "den", "p1", "m1", "p2", "m2", "pm")):
        return False
    second = match.group("n2")
    if second and not (len(second) == 4 and second.isdigit() and 1900 <= int(second) <= 2099):
        return False  # "2019-2023" is a span of years; "2000-5000 steps" is not
    follower = re.match(r"\s+([a-z]+)\b", text[match.end() : match.end() + 30])
    return follower is None or follower.group(1) in _YEAR_FOLLOWERS


def extract_numbers(text: str) -> list[NumericMention]:
    """Find the numbers, percentages, ranges and ratios in `text` with their hedging qualifiers.

    Args:
        text: Any free text (a claim, a conclusion, a log excerpt).

    Returns:
        Mentions in order of appearance; see the module docstring for what is read and what is ignored.
    """
    mentions: list[NumericMention] = []
    masked = [m.span() for m in _MASKED.finditer(text)]
    pos = 0
    while (match := _MENTION.search(text, pos)) is not None:
        start, end = match.span()
        pos = end
        sign = match.group("s1")
        number_start = match.start("n1")
        if sign and start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_+"):
            sign, start = None, number_start  # "TICA-0", "C++11": a joiner, not a minus sign
        first_end = max(match.end(g) for g in ("n1", "den", "p1", "m1") if match.group(g))
        if any(a <= number_start < b for a, b in masked):
            pos = max(b for a, b in masked if a <= number_start < b)
            continue
        if _is_identifier_part(text, number_start, end, text.rfind("\n", 0, start) + 1):
            pos = first_end  # "A100 and 3 seeds": the number after the identifier is still read
            continue
        high: float | None = None
        low = _to_float(match.group("n1"), sign)
        whole = True
        if match.group("n2"):
            second = _to_float(match.group("n2"), match.group("s2"))
            separator = match.group("sep").strip()
            before = text[max(0, start - 12) : start].rstrip().lower()
            whole = second > low and (
                separator in ("-", "–", "—")
                or (separator == "to" and not before.endswith("from"))
                or (separator == "and" and before.endswith("between"))
            )
            if whole:
                high = second
            else:  # two numbers, not a range: end this mention after the first, read the second next
                end = pos = first_end
        in_range = high is not None
        is_percent = bool(match.group("p1") or (in_range and match.group("p2")))
        magnitude = match.group("m1") or (match.group("m2") if in_range else None)
        scale = _MAGNITUDE.get(magnitude or "", 1.0)
        plus_minus = _to_float(match.group("pm")) * scale if whole and match.group("pm") else None
        value = low * scale
        qualifier, approximate = _qualifier(text, start, end)
        mentions.append(
            NumericMention(
                value=value,
                raw=text[start:end].rstrip(),
                is_percent=is_percent,
                span=(start, start + len(text[start:end].rstrip())),
                qualifier=qualifier,
                approximate=approximate,
                is_year=qualifier is None and _looks_like_year(text, match, value),
                high=high * scale if high is not None else None,
                plus_minus=plus_minus,
                denominator=float(match.group("den")) if match.group("den") else None,
            )
        )
    return mentions


def _forms(mention: NumericMention) -> list[tuple[bool, tuple[float, float]]]:
    """(is_percent, interval) readings of a mention: as written, and a ratio 78/100 also as 78%."""
    forms = [(mention.is_percent, mention.interval)]
    if mention.denominator:
        low, high = mention.interval
        forms.append((True, (100 * low / mention.denominator, 100 * high / mention.denominator)))
    return forms


def _readings(
    claim: NumericMention, answer: NumericMention
) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """(claim interval, answer interval in the claim's unit) for every reading the units allow.

    Same unit: as written. One side a percentage, the other bare: the bare number read as a fraction
    (12% == 0.12), and also as written when the bare number exceeds 1 in magnitude (it cannot be a fraction,
    so it is a percentage written without its sign).
    """
    readings = []
    for claim_percent, claim_interval in _forms(claim):
        for answer_percent, (low, high) in _forms(answer):
            if claim_percent == answer_percent:
                readings.append((claim_interval, (low, high)))
                continue
            factor = 100.0 if claim_percent else 0.01
            readings.append((claim_interval, (low * factor, high * factor)))
            bare = (low, high) if claim_percent else claim_interval
            if max(abs(bare[0]), abs(bare[1])) > 1:
                readings.append((claim_interval, (low, high)))
    return readings


def _judge_pair(
    claim: NumericMention, answer: NumericMention, rel_tol: float, abs_tol: float
) -> tuple[bool, float, str]:
    """(satisfied, relative distance outside the accepted interval, verdict word) for the best reading."""
    # A stated "±" already is the claim's uncertainty; only a bare hedge ("~0.1") widens the tolerance.
    factor = 2.0 if claim.approximate and claim.plus_minus is None else 1.0
    verdicts: list[tuple[bool, float, str]] = []
    for (claim_low, claim_high), (low, high) in _readings(claim, answer):
        accept_low = claim_low - max(factor * rel_tol * abs(claim_low), abs_tol)
        accept_high = claim_high + max(factor * rel_tol * abs(claim_high), abs_tol)
        if claim.qualifier == "upper_bound":
            excess, word = max(0.0, high - accept_high), "exceeds"
        elif claim.qualifier == "lower_bound":
            excess, word = max(0.0, accept_low - low), "falls short"
        else:
            excess, word = max(0.0, low - accept_high, accept_low - high), "differs"
        if excess == 0:
            word = "within tolerance" if claim.qualifier in (None, "approx") else "satisfies bound"
        verdicts.append((excess == 0, excess / max(abs(claim_low), abs(claim_high), 1e-12), word))
    return min(verdicts, key=lambda v: (not v[0], v[1]))


def honours(claim: NumericMention, answer: NumericMention, rel_tol: float = 0.05, abs_tol: float = 0.0) -> bool:
    """Whether `answer` honours `claim` under the tolerance rule of `compare_numbers` (one pair, no text).

    Used to check a number a conclusion states (as the claim, with its own hedge or bound) against a
    value a log recorded (as the answer).
    """
    return _judge_pair(claim, answer, rel_tol, abs_tol)[0]


def _label(mention: NumericMention) -> str:
    qualifier = _QUALIFIER_LABEL.get(mention.qualifier or "")
    if mention.approximate and mention.qualifier in ("upper_bound", "lower_bound"):
        qualifier = f"approx. {qualifier}"
    return mention.describe() + (f" ({qualifier})" if qualifier else "")


def compare_numbers(
    claim_text: str, answer_text: str, rel_tol: float = 0.05, abs_tol: float = 0.0
) -> NumericCheck:
    """Check that every number of a claim is honoured by some number of the answer.

    Rule, per claim number c (years ignored on both sides), with tolerance
    tol(v) = max(k·rel_tol·|v|, abs_tol), where k = 2 when c is approximate ("~", "about", "roughly", ...)
    without a "±" and k = 1 otherwise, an
    answer number a matches when:
        * plain or approx: a's interval overlaps [c_low - tol(c_low), c_high + tol(c_high)], where a range or
          "±" gives c and a an interval and a single number is a point;
        * upper_bound ("at most", "<=", "or lower", ...): a's high end <= c + tol(c);
        * lower_bound ("at least", ">=", "or higher", ...): a's low end >= c - tol(c).
    Units: a percentage against a bare number compares the percentage divided by 100 (12% == 0.12); a bare
    number above 1 in magnitude is also compared as written (a percentage without its sign); a ratio 78/100
    also reads as 78%. Other units (ns, x, GB) are not converted.

    Args:
        claim_text: The expected statement, e.g. "JSD should be ~0.1 or lower".
        answer_text: The agent's text, e.g. "we measured a JSD of 0.08".
        rel_tol: Relative tolerance (0.05 = 5%).
        abs_tol: Absolute tolerance floor.

    Returns:
        "claim_has_no_numbers" when the claim has none, "answer_has_no_numbers" when the answer has none,
        else "match" when every claim number is honoured and "mismatch" otherwise; one detail line and one
        pair per claim number (the matching answer number, or the closest one when none matches).
    """
    if rel_tol < 0 or abs_tol < 0:
        raise ValueError("rel_tol and abs_tol must be non-negative")
    claims = [m for m in extract_numbers(claim_text) if not m.is_year]
    if not claims:
        return NumericCheck(status="claim_has_no_numbers")
    answers = [m for m in extract_numbers(answer_text) if not m.is_year]
    if not answers:
        details = [f"claim {_label(c)}: the answer has no numbers" for c in claims]
        pairs = [
            NumberPair(claim=c, answer=None, satisfied=False, detail=d)
            for c, d in zip(claims, details, strict=True)
        ]
        return NumericCheck(status="answer_has_no_numbers", details=details, pairs=pairs)
    pairs = []
    for claim in claims:
        scored = [(_judge_pair(claim, answer, rel_tol, abs_tol), answer) for answer in answers]
        (satisfied, _, word), best = min(scored, key=lambda item: (not item[0][0], item[0][1]))
        detail = f"claim {_label(claim)} vs answer {best.describe()}: {word}"
        pairs.append(NumberPair(claim=claim, answer=best, satisfied=satisfied, detail=detail))
    status: CheckStatus = "match" if all(pair.satisfied for pair in pairs) else "mismatch"
    return NumericCheck(status=status, details=[pair.detail for pair in pairs], pairs=pairs)
