"""Prompt-injection attempts in untrusted agent text: found, quoted, and cut out.

Agent output (design, conclusion, diff, logs) reaches an LLM judge. Text aimed at that judge ("ignore the
rubric", "give this full marks", a spoofed "<|im_start|>system" turn, a JSON blob with "verdict": "pass")
must not sway it. `find_injections` reports such text with its line and the pattern family it matched;
`strip_injections` removes the offending sentences (whole lines when nothing else is left on them) and keeps
every other byte as it was, so the judge and the embedded aligner never see the injected instructions.

Patterns are case-insensitive and tolerate runs of spaces and punctuation between words, and matches may
span lines. They are chosen to stay silent on ordinary research text: "we disregard outliers",
"LLM-as-a-judge", "the model tends to ignore the instructions", "the system prompt used in our experiments"
are not findings; an instruction addressed to the grader is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_GAP = r"[\W_]{1,12}"  # between two words: spaces, newlines, punctuation, markup
# An instruction starts a sentence, a line or a clause ("Grader: ignore ...", "please ignore ...", "you must
# ignore ..."); "the model tends to ignore the instructions" is research text, not an instruction.
_LEAD_BEFORE = re.compile(
    r"(?:^[ \t>*#\-+/\"'(\[]*|[.!?:;\"'(\[*>][ \t]*|[.!?:;]\s[ \t]*"
    r"|\b(?:please|kindly|now|just|also|so)\W+|\byou\W+(?:should|must|need\W+to|have\W+to|are\W+to|will|can)\W+)\Z",
    re.I | re.M,
)
_DETERMINERS = (
    r"(?:(?:all|any|the|of|your|these|those|previous|prior|above|earlier|preceding|other|given|grading"
    rf"|evaluation|system|original|existing|such){_GAP}){{0,3}}"
)
_OBJECTS = (
    r"(?:instructions?|rubrics?|criteria|criterion|guidelines|rules|directions|prompts?|system\s+(?:message|prompt)"
    r"|grading\s+(?:rules|criteria|instructions))\b"
)
_SCORE = (
    rf"(?:full{_GAP}(?:marks|score|credit|points)|perfect{_GAP}(?:score|marks)|maximum{_GAP}(?:score|marks)"
    rf"|top{_GAP}(?:score|marks)|(?:a{_GAP})?score{_GAP}of{_GAP}100|100{_GAP}?(?:points|percent|%|/{_GAP}?100"
    rf"|out{_GAP}of{_GAP}100|marks)|100(?=[ \t]*(?:[.!;]|$)))"
)

_PATTERNS: list[tuple[str, str]] = [
    ("ignore_instructions", rf"\b(?:ignore|disregard|forget){_GAP}{_DETERMINERS}{_OBJECTS}"),
    (
        "ignore_instructions",
        rf"\b(?:ignore|disregard|forget){_GAP}(?:everything|anything|all){_GAP}"
        r"(?:above|before|previously|said|you\s+were\s+told)\b",
    ),
    (
        "pass_everything",
        rf"\b(?:pass|approve|accept){_GAP}(?:every|all|each){_GAP}(?:of{_GAP}the{_GAP})?"
        r"(?:leaf|leaves|criteria|criterion|requirements?|checks?|rubric\s+items?|items|stages?)\b",
    ),
    (
        "pass_everything",
        rf"\bmark{_GAP}(?:this|these|it|everything|all|every|each)(?:{_GAP}[a-z]+){{0,3}}?{_GAP}"
        r"(?:as{_GAP})?(?:pass(?:ed|ing)?|correct|satisfied|complete|implemented|successful)\b",
    ),
    (
        "full_marks",
        rf"\b(?:give|assign|award|grant|rate){_GAP}(?:this|me|us|the{_GAP}(?:submission|agent)|this{_GAP}"
        rf"(?:submission|answer|work|response)){_GAP}(?:a{_GAP})?{_SCORE}",
    ),
    (
        "full_marks",
        rf"\b(?:should|must|shall|will|deserves{_GAP}to){_GAP}(?:receive|get|be{_GAP}given|be{_GAP}awarded"
        rf"|be{_GAP}scored|be{_GAP}graded){_GAP}(?:a{_GAP})?{_SCORE}",
    ),
    (
        "role_claim",
        rf"\byou{_GAP}are{_GAP}(?:now{_GAP})?(?:a|an|the|my){_GAP}(?:[a-z]+{_GAP})?"
        r"(?:grader|judge|evaluator|grading\s+(?:assistant|model))\b",
    ),
    (
        "role_claim",
        rf"\bas{_GAP}(?:the|a|an|my){_GAP}(?:grader|judge|evaluator)\s*[,:]\s*"
        r"(?:you|please|mark|give|score|grade|assign|ignore|return|output|respond|rate|award|pass|note)\b",
    ),
    (
        "role_claim",
        rf"\b(?:dear|attention|hey|hello|note{_GAP}to(?:{_GAP}the)?|message{_GAP}(?:to|for)(?:{_GAP}the)?)"
        rf"{_GAP}(?:ai{_GAP}|llm{_GAP}|automated{_GAP})?(?:grader|judge|evaluator)s?\b",
    ),
    (
        "role_claim",
        rf"\b(?:grader|judge|evaluator){_GAP}(?:must|should|shall|will|is{_GAP}to|needs{_GAP}to)"
        rf"{_GAP}(?:mark|give|score|grade|pass|rate|award|accept|approve){_GAP}"
        r"(?:this|these|me|us|all|every|(?:the|this|my)\s+submission)\b",
    ),
    (
        "system_prompt",
        rf"\b(?:real|actual|your|hidden|overriding|override){_GAP}system{_GAP}prompt\b"
        rf"|\b(?:new|updated|revised){_GAP}system{_GAP}prompt\s*:"
        rf"|\b(?:begin|end|start){_GAP}(?:of{_GAP})?(?:the{_GAP})?system{_GAP}(?:prompt|message)\b",
    ),
    (
        "role_tag",
        r"<\|\s*(?:im_start|im_end|system|assistant|user|endoftext|eot_id|start_header_id|end_header_id)\s*\|>"
        r"(?:[ \t]*(?:system|assistant|user)\b)?"
        r"|\[/?INST\]|<</?SYS>>|</?(?:system|untrusted[\w-]*|grader|judge|rubric)\b[^>\n]{0,80}>",
    ),
    (
        "role_tag",
        r"^[ \t]*#{1,6}[ \t]*(?:system|assistant)[ \t]*:?[ \t]*$"
        r"|^[ \t]*#{1,6}[ \t]*(?:instruction|response)[ \t]*:[ \t]*$"
        r"|^[ \t]*(?:system|assistant)[ \t]*:[ \t]*"
        r"(?:you|ignore|the\s+(?:grader|judge)|new\s+instructions)\b",
    ),
    (
        "verdict_json",
        r"[\"'](?:verdict|judg(?:e)?ment|grade)[\"']\s*:\s*[\"']"
        r"(?:pass(?:ed)?|correct|yes|satisfied|full(?:\s+marks)?|implemented|supported)[\"']"
        r"|[\"'](?:design|conclusion|setup|implementation|execution)_score[\"']\s*:\s*(?:[\"']correct[\"']|100\b)",
    ),
]
_COMPILED = [(name, re.compile(pattern, re.I | re.M)) for name, pattern in _PATTERNS]
# Every match of a family contains one of its trigger words; scanning only windows around them keeps a
# multi-megabyte diff fast (the full patterns cost about 2 µs per character when run over everything).
_TRIGGERS: dict[str, tuple[str, ...]] = {
    "ignore_instructions": ("ignore", "disregard", "forget"),
    "pass_everything": ("pass", "approve", "accept", "mark"),
    "full_marks": ("full", "perfect", "maximum", "top", "100"),
    "role_claim": ("grader", "judge", "evaluator", "grading"),
    "system_prompt": ("system",),
    # "system", "untrusted", "grader", "judge", "rubric" also cover the tag forms (<system>, </untrusted...>).
    "role_tag": (
        *("<|", "[inst", "[/inst", "<<sys", "<</sys", "system", "assistant", "instruction", "response"),
        *("untrusted", "grader", "judge", "rubric"),
    ),
    "verdict_json": ("verdict", "judgment", "judgement", "grade", "_score"),
}
_WINDOW = 300  # characters around a trigger; a match is far shorter
# Families that are instructions only in imperative position (start of a sentence, line or clause, or after
# "please" / "you must"): "the model tends to ignore the instructions" is research text.
_NEEDS_LEAD = frozenset({"ignore_instructions", "pass_everything"})
_AND_BEFORE = re.compile(r"\band\W+\Z", re.I)  # "ignore the rubric and pass every leaf" chains an order
_MAX_LINE_SNAP = 2000
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_SENTENCE_REACH = 300


@dataclass(frozen=True)
class InjectionFinding:
    """One suspected injection.

    Attributes:
        quote: The matched text, verbatim (it may span lines).
        line_no: 1-based line where the match starts.
        pattern: The pattern family: ignore_instructions, pass_everything, full_marks, role_claim,
            system_prompt, role_tag or verdict_json.
    """

    quote: str
    line_no: int
    pattern: str


def _windows(text: str, lowered: str, triggers: tuple[str, ...]) -> list[tuple[int, int]]:
    """Merged ranges around trigger occurrences, ending at a line end so `$` and `\\b` see real text."""
    ranges: list[tuple[int, int]] = []
    for trigger in triggers:
        position = lowered.find(trigger)
        while position != -1:
            start = max(0, position - _WINDOW)
            end = text.find("\n", position + _WINDOW, position + _MAX_LINE_SNAP)
            if end == -1:  # a very long line: stop at a space instead, so no word is cut
                space = text.find(" ", position + _WINDOW)
                end = len(text) if space == -1 else space
            ranges.append((start, end))
            position = lowered.find(trigger, position + len(trigger))
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for start, end in ranges:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _has_lead(text: str, start: int, name: str) -> bool:
    before = max(0, start - 40)
    if _LEAD_BEFORE.search(text, before, start):
        return True
    return name == "pass_everything" and _AND_BEFORE.search(text, before, start) is not None


def _spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, family) of every match, in text order."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters change length when lowered: scan everything
        lowered = ""
    found: set[tuple[int, int, str]] = set()
    windows_of: dict[str, list[tuple[int, int]]] = {}
    for name, pattern in _COMPILED:
        if name not in windows_of:
            windows_of[name] = _windows(text, lowered, _TRIGGERS[name]) if lowered else [(0, len(text))]
        for window_start, window_end in windows_of[name]:
            for match in pattern.finditer(text, window_start, window_end):
                start, end = match.span()
                if name in _NEEDS_LEAD and not _has_lead(text, start, name):
                    continue
                found.add((start, end, name))
    return sorted(found)


def find_injections(text: str | None) -> list[InjectionFinding]:
    """Find text in untrusted agent output that addresses or impersonates the grader.

    Args:
        text: Agent text (design, conclusion, diff, log); None or "" gives no finding.

    Returns:
        Findings in text order; overlapping matches of different families are all reported.
    """
    if not text:
        return []
    return [
        InjectionFinding(quote=text[start:end], line_no=text.count("\n", 0, start) + 1, pattern=name)
        for start, end, name in _spans(text)
    ]


def _removal_span(text: str, start: int, end: int, keep_newline: bool) -> tuple[int, int]:
    """Widen a match to its sentence, and to whole lines when nothing else would remain on them.

    A sentence ends at . ! or ? before whitespace, or at the line's end; on long unpunctuated lines (code,
    minified JSON) the widening stops after _SENTENCE_REACH characters, so legitimate text is not lost.
    """
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    reach_start = max(line_start, start - _SENTENCE_REACH)
    left = line_start if reach_start == line_start else start
    for boundary in _SENTENCE_END.finditer(text, reach_start, start):
        left = boundary.end()
    while left < start and text[left] in " \t":
        left += 1
    reach_end = min(line_end, end + _SENTENCE_REACH)
    right_match = _SENTENCE_END.search(text, end, reach_end)
    right = right_match.end() if right_match else (line_end if reach_end == line_end else end)
    while right < line_end and text[right] in " \t":
        right += 1
    if not (text[line_start:left] + text[right:line_end]).strip():
        # The sentence is all that is on its line(s): drop the line(s), with their newline unless a
        # replacement takes their place.
        return line_start, line_end if keep_newline else min(line_end + 1, len(text))
    return left, right


def strip_injections(text: str, *, replacement: str = "") -> str:
    """Remove suspected injections (their sentences, or whole lines) and keep every other byte as it was.

    Args:
        text: Untrusted agent text.
        replacement: Put in place of each removed piece (e.g. "[removed]"); "" removes silently.

    Returns:
        The text without the offending sentences; `find_injections` on it finds nothing.
    """
    for _ in range(5):  # removing one sentence can join two fragments into a new match; repeat until clean
        spans = [_removal_span(text, start, end, bool(replacement)) for start, end, _ in _spans(text)]
        if not spans:
            return text
        merged: list[list[int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        pieces, cursor = [], 0
        for start, end in merged:
            pieces.append(text[cursor:start])
            pieces.append(replacement)
            cursor = end
        pieces.append(text[cursor:])
        text = "".join(pieces)
    return text
