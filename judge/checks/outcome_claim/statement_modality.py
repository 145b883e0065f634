"""How a conclusion states things: asserted, negated, hedged or conditional; and "nothing was run" admissions.

A conclusion that restates the expected outcome as a prediction ("X should improve Y"), a hypothetical ("had we
run it, X would improve Y") or under a disclaimer ("We did not run anything.") reports no result. This module
reads that mechanically, per sentence and for the conclusion as a whole:

    * `classify_sentence`: the sentence's own mode with the words that decided it. Precedence: conditional
      (counterfactuals, hypotheticals, "if ... would", "once ... resolved"), then negated (the reporting itself
      negated: "could not be verified", "we were unable to measure", "no results were obtained"), then hedged
      (predictions and possibility: should, would, may, might, will, expected to, we anticipate, likely, seems
      to), else asserted. Evidential verbs ("results suggest", "indicate") and confirmations ("as expected",
      "confirms the hypothesis") are not hedges: they report what a run showed; nor is a hedge that only states
      the hypothesis a later report answers ("we expected X to help, and indeed we observed ...").
    * `relative_mode`: the mode against a claim; a sentence whose negations differ in parity from the claim's
      ("X does not improve Y" against "X improves Y") is negated relative to it, one negated like the claim is not.
    * `sentence_modalities`: each conclusion sentence's mode, where a framing lead-in ("Had we run the
      experiments, we would expect the following:", a heading "Expected results") passes its mode on to the
      sentences it introduces (a bullet block, or up to the next heading).
    * `find_admission`: the sentence saying no experiment was run ("We did not run anything.", "No experiments
      were executed.", "The results below are hypothetical."), if any.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from judge.text.items import clean_markup, split_sentences
from judge.text.polarity import negation_count

Modality = Literal["asserted", "negated", "hedged", "conditional"]

_PROCESS_VERBS = (
    r"(?:run|ran|execut\w*|conduct\w*|perform\w*|complet\w*|finish\w*|carr(?:y|ied)\s+out|confirm\w*|verif\w*"
    r"|validat\w*|establish\w*|determin\w*|measur\w*|obtain\w*|reproduc\w*|replicat\w*|evaluat\w*|assess\w*"
    r"|test(?:ed|ing)?|collect\w*|deriv\w*|comput\w*|launch\w*|quantif\w*|analy[sz]\w*|done|do)"
)
_PROCESS_NOUNS = (
    r"(?:experiments?|runs?|scripts?|code|simulations?|trainings?|evaluations?|analys[ie]s|benchmarks?|tests?"
    r"|jobs?|pipelines?|study|studies|measurements?|data\s+collection|execution|validation|verification)"
)
# A process noun followed by a qualifier names one part of the work ("the experiment on ImageNet").
_NO_QUALIFIER = r"(?!\s+(?:on|for|with|in|at|using|over|across|of|beyond|under|by)\b)"

_CONDITIONAL = [re.compile(p, re.I) for p in (
    r"\bif\s+(?:\w+\s+){0,4}?(?:had|were|was\s+to|could|would)\b",
    r"\b(?:had|were)\s+(?:we|i|they|it|this|these|the\s+\w+(?:\s+\w+)?)\s+(?:\w+\s+)?"
    r"(?:been|run|executed|completed|able|to|succeeded|finished|trained|evaluated|conducted|performed)\b",
    r"\b(?:would|could|might|should)(?:\s+not|n't)?\s+have\s+(?:been\s+)?(?:\w+ed|\w+en|run|shown|seen|done|made"
    r"|found|got|led|met|won|held|brought|taught|thought|sought|built|felt|kept|left|lost|meant|said|told)\b",
    r"\bhypothetical(?:ly)?\b|\bin\s+(?:theory|principle)\b|\btheoretically\b|\bcounterfactual\w*\b",
    r"\bsuppos(?:e|ing)\b|\bimagin(?:e|ing)\b|\bassuming\b",
    r"\b(?:once|after|until)\s+(?:\w+\s+){0,6}?(?:is|are|has\s+been|have\s+been|gets?|be)\s+(?:\w+\s+)?"
    r"(?:resolved|fixed|addressed|available|run|executed|completed|complete|finished|implemented|overcome)\b",
    r"\bpending\b",
    r"\b(?:if|unless|provided\s+that|as\s+long\s+as)\b[^.;]*\b(?:would|could|might)\b",
    r"\b(?:would|could|might)\b[^.;]*\b(?:if|unless|provided\s+that)\b",
)]
_NEGATED = [re.compile(p, re.I) for p in (
    r"\b(?:(?:did|do|does|could|can|would|was|were|is|are|has|have|had)(?:\s+not|n't)|cannot|never|unable\s+to"
    r"|not\s+able\s+to|failed\s+to|fails?\s+to)\s+(?:(?:be|been|yet|fully|actually|successfully|properly)\s+)*"
    + _PROCESS_VERBS + r"\b",
    r"\b(?:no|none\s+of\s+the)\s+(?:actual\s+|real\s+|experimental\s+|empirical\s+|final\s+)?"
    r"(?:experiments?|runs?|results?|data|measurements?|metrics|numbers|outputs?|logs?)\s+"
    r"(?:were|was|are|is|could|have|has|had)\b",
    r"\b(?:not\s+possible|impossible)\s+to\b",
    r"\b(?:preclud|prevent|thwart|block|imped|hinder)\w*\s+(?:us\s+from\s+)?(?:\w+\s+){0,2}?"
    + _PROCESS_NOUNS + r"\b",
    r"\black\s+of\s+(?:\w+\s+){0,2}?(?:data|results?|measurements?|execution|runs?)\b",
)]
_HEDGED = [re.compile(p, re.I) for p in (
    r"\b(?:should|would|may|might|ought\s+to|will|shall|won't)\b",
    r"(?<!\bwe\s)(?<!\bI\s)\bcould\b(?!\s*(?:not\b|n't))",
    r"\b(?:is|are|was|were|be|being|been)\s+(?:\w+\s+)?(?:expected|anticipated|predicted|projected|likely|unlikely"
    r"|supposed|hypothesi[sz]ed|assumed|believed|thought|presumed)\s+to\b",
    r"\b(?:we|i|one|they|authors?)\s+(?:would\s+|might\s+|could\s+|can\s+|do\s+)?(?:expect|anticipate|predict"
    r"|hypothesi[sz]e|believe|suspect|speculate|assume|hope|presume|foresee|envision|envisage|conjecture)\w*\b",
    r"\bexpected\s+to\b|\bexpect(?:s|ed)?\s+that\b",
    r"^\W*(?:the\s+|our\s+|an?\s+)?(?:expected|anticipated|predicted|projected|hypothesi[sz]ed|hypothetical|likely)"
    r"\s+(?:results?|outcomes?|findings?|observations?|behaviou?r|trends?|performance)\b",
    r"\b(?:likely|unlikely|probably|possibly|perhaps|presumably|potentially|conceivably|plausibly|maybe|seemingly"
    r"|supposedly|hopefully|tentative(?:ly)?|inconclusive)\b",
    r"\b(?:appears?|appeared|seems?|seemed)\s+to\b",
    r"\b(?:remains?|remained|yet)\s+to\s+be\s+\w+",
    r"\b(?:aims?|aimed|intends?|intended|plans?|planned)\s+to\b",
)]
# Phrases that contain a hedge word but report a finding: masked before the hedges are looked for.
_NOT_HEDGES = re.compile(
    r"\b(?:as|than|what)\s+(?:we\s+|was\s+|were\s+|originally\s+|initially\s+)?(?:expected|anticipated|predicted"
    r"|hypothesi[sz]ed|hoped|intended|planned)\b"
    r"|\b(?:confirm|support|match|validat|corroborat|verif|meet|met)\w*\s+(?:the\s+|our\s+|its\s+|their\s+|all\s+)?"
    r"(?:expectations?|hypothes[ie]s|predictions?)\b"
    r"|\b(?:it\s+)?should\s+be\s+(?:noted|mentioned|emphasi[sz]ed|stressed)\b",
    re.I,
)
# A report of what a run showed; a hedge before it states the hypothesis it answers.
_EVIDENTIAL = re.compile(
    r"\b(?:results?|experiments?|data|measurements?|we|logs?|runs?|it)\s+(?:clearly\s+|also\s+)?(?:show(?:s|ed)?"
    r"|found|find|observed?|measured|confirm(?:s|ed)?|demonstrated?|demonstrates|reveal(?:s|ed)?)\b|\bindeed\b",
    re.I,
)
_ADMISSIONS = [re.compile(p, re.I) for p in (
    r"\b(?:we|i|the\s+agent)\s+(?:did\s+not|didn't|could\s+not|couldn't|were\s+unable\s+to|was\s+unable\s+to"
    r"|were\s+not\s+able\s+to|was\s+not\s+able\s+to|never|have\s+not|haven't|had\s+not|hadn't|failed\s+to|cannot"
    r"|can't)\s+(?:actually\s+|successfully\s+|yet\s+|even\s+)?(?:get\s+to\s+)?"
    r"(?:run|ran|execut\w*|conduct\w*|perform\w*|carr(?:y|ied)\s+out|launch\w*|start\w*|complet\w*|do|did)\s+"
    r"(?:anything|any\s+(?:of\s+(?:the|our)\s+)?" + _PROCESS_NOUNS + r"|(?:the|our|this|these)\s+(?:actual\s+)?"
    + _PROCESS_NOUNS + _NO_QUALIFIER + r")",
    r"\b(?:no|none\s+of\s+the)\s+(?:actual\s+|real\s+)?" + _PROCESS_NOUNS + r"\s+(?:were|was|have\s+been|has\s+been"
    r"|could\s+be|had\s+been)\s+(?:actually\s+|successfully\s+)?(?:run|executed|conducted|performed|carried\s+out"
    r"|completed|launched|done)\b",
    r"\bnothing\s+(?:was|has\s+been|had\s+been|could\s+be|got)\s+(?:actually\s+)?(?:run|executed|computed|measured"
    r"|tested)\b",
    r"\b(?:the|our|this|these)\s+(?:actual\s+)?" + _PROCESS_NOUNS + r"\s+(?:was|were|has|have|had|could)\s*(?:not|n't"
    r"|never)\s+(?:been\s+|be\s+)?(?:actually\s+|successfully\s+)?(?:run|executed|conducted|performed|carried\s+out"
    r"|completed|launched|started)\b" + _NO_QUALIFIER,
    r"\bwithout\s+(?:actually\s+)?(?:running|executing|conducting|performing)\s+(?:anything|any|the|our)\b",
    r"\bno\s+(?:actual\s+|real\s+|experimental\s+|empirical\s+)?(?:results|data|measurements|numbers|outputs)\s+"
    r"(?:were|was|have\s+been|are|could\s+be)\s+(?:obtained|produced|collected|generated|measured|gathered"
    r"|recorded)\b",
    r"\b(?:the\s+)?(?:following|above|below|these|all|reported)\s+(?:results|numbers|values|outcomes|findings"
    r"|metrics)\s+(?:are|is|were)\s+(?:\w+\s+)?(?:expected|hypothetical|projected|predicted|anticipated|illustrative"
    r"|fabricated|made\s+up|placeholders?|not\s+(?:measured|real|actual|obtained))\b",
)]
# A lead-in that introduces what follows ("... the following:", "... as follows", a line ending in ":").
_FORWARD = re.compile(r":\s*$|\b(?:the\s+following|as\s+follows|below)\b", re.I)
_FRAME_HEADING = re.compile(
    r"\b(?:expected|anticipated|predicted|projected|hypothesi[sz]ed|hypothetical|likely)\s+(?:results?|outcomes?"
    r"|findings?|observations?|behaviou?r)\b",
    re.I,
)
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+\S|\*\*[^*]+\*\*:?\s*$|__[^_]+__:?\s*$)")
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d+[.)]|\(?[a-z]\))\s+")
_MAX_CUE = 60


@dataclass(frozen=True)
class SentenceModality:
    """How one sentence states what it says.

    Attributes:
        mode: "asserted", "negated", "hedged" or "conditional" (the sentence on its own or by its frame).
        cues: The words that decided the mode, verbatim (a frame's cue is prefixed with "framed by").
        negations: Negation cues the sentence holds (polarity.negation_count), for `relative_mode`.
    """

    mode: Modality
    cues: tuple[str, ...] = ()
    negations: int = 0


def _found(patterns: list[re.Pattern[str]], text: str) -> list[str]:
    return [m.group(0).strip()[:_MAX_CUE] for p in patterns if (m := p.search(text))]


def classify_sentence(text: str) -> SentenceModality:
    """The mode of one sentence on its own (see the module docstring for the rules).

    Args:
        text: One sentence (of a conclusion, or a claim).

    Returns:
        The mode, the cues that decided it and the sentence's negation count.
    """
    negations = negation_count(text)
    ordered: tuple[tuple[Modality, list[re.Pattern[str]]], ...] = (("conditional", _CONDITIONAL),
                                                                    ("negated", _NEGATED))
    for mode, patterns in ordered:
        cues = _found(patterns, text)
        if cues:
            return SentenceModality(mode, tuple(cues), negations)
    masked = _NOT_HEDGES.sub(lambda m: " " * len(m.group(0)), text)
    hedges = [m for p in _HEDGED if (m := p.search(masked))]
    report = max((m.start() for m in _EVIDENTIAL.finditer(masked)), default=-1)
    # "We expected X to improve Y, and indeed we observed ...": the hedge states the hypothesis, the rest reports.
    if hedges and max(m.start() for m in hedges) > report:
        return SentenceModality("hedged", tuple(m.group(0).strip()[:_MAX_CUE] for m in hedges), negations)
    return SentenceModality("asserted", (), negations)


def relative_mode(sentence: SentenceModality, claim: str) -> SentenceModality:
    """`sentence`'s mode against `claim`: an asserted sentence negated unlike the claim is "negated".

    Args:
        sentence: The sentence's own modality.
        claim: The claim it is read against.
    """
    if sentence.mode == "asserted" and sentence.negations % 2 != negation_count(claim) % 2:
        return SentenceModality("negated", ("negation differs from the claim",), sentence.negations)
    return sentence


def find_admission(text: str | None) -> str | None:
    """The first sentence of `text` that says no experiment was run, or None.

    Args:
        text: A whole conclusion.
    """
    paragraphs: list[list[str]] = [[]]
    for line in (text or "").splitlines():  # a sentence may wrap over lines; blank lines and headings end one
        if not line.strip() or _HEADING.match(line) or _BULLET.match(line):
            paragraphs.append([])
        if line.strip() and not _HEADING.match(line):
            paragraphs[-1].append(_BULLET.sub("", clean_markup(line)))
    for paragraph in paragraphs:
        for sentence in split_sentences(" ".join(paragraph)):
            if any(p.search(sentence) for p in _ADMISSIONS):
                return " ".join(sentence.split())[:200]
    return None


def _normalised(text: str) -> str:
    return " ".join(text.split())


def _frame_events(conclusion: str) -> tuple[str, list[tuple[int, SentenceModality | None]]]:
    """The conclusion's text flattened as split_claims joins it, with where frames open (a modality) and close."""
    flat = ""
    events: list[tuple[int, SentenceModality | None]] = []
    frame: SentenceModality | None = None
    scope = "none"  # "section" (a heading's frame), "block" (a lead-in's), "bullets" (inside its bullet block)
    for raw in conclusion.splitlines():
        line = _normalised(clean_markup(raw))
        if not line:
            if frame is not None and scope == "block":  # a lead-in's paragraph ended without bullets
                frame, scope = None, "none"
                events.append((len(flat), None))
            continue
        start = len(flat)
        flat += line + " "
        is_bullet = bool(_BULLET.match(raw))
        if _HEADING.match(raw):
            heading_frame = _FRAME_HEADING.search(line)
            frame = SentenceModality("hedged", (f"framed by {heading_frame.group(0)!r}",)) if heading_frame else None
            scope = "section" if frame else "none"
            events.append((start, frame))
            continue
        if frame is not None and scope == "bullets" and not is_bullet:
            frame, scope = None, "none"
            events.append((start, None))
        elif frame is not None and scope == "block" and is_bullet:
            scope = "bullets"
        for sentence in split_sentences(line):
            own = classify_sentence(sentence)
            if own.mode in ("hedged", "conditional") and _FORWARD.search(sentence):
                cue = own.cues[0] if own.cues else own.mode
                frame, scope = SentenceModality(own.mode, (f"framed by {cue!r}",)), "block"
                events.append((start + line.find(sentence) + len(sentence), frame))
    return flat, events


def sentence_modalities(conclusion: str | None, sentences: list[str]) -> list[SentenceModality]:
    """Each of `sentences` (the conclusion's, in order) with its own mode, or its frame's when it has none.

    Args:
        conclusion: The whole conclusion the sentences were split from.
        sentences: Its sentences as `split_claims` gave them.
    """
    flat, events = _frame_events(conclusion or "")
    flat = flat.lower()
    result: list[SentenceModality] = []
    cursor = 0
    for sentence in sentences:
        own = classify_sentence(sentence)
        key = _normalised(sentence).lower()[:60]
        position = flat.find(key, cursor) if key else -1
        if position >= 0:
            cursor = position + 1
        frame = None
        for at, opened in events:
            if position < 0 or at > position:
                break
            frame = opened
        if own.mode == "asserted" and frame is not None:
            own = SentenceModality(frame.mode, frame.cues, own.negations)
        result.append(own)
    return result
