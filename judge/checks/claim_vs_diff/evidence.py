"""Evidence for claim-vs-diff leaves: a natural-language statement about a diff, checked against its hunks.

The leaf's target is the claim. Its snippets are the hunks (or, for long hunks, line windows of them) that
align best with the claim by embedding similarity. Its facts are mechanical features meant to generalise
beyond any one labelled set:

* the code identifiers the claim names (quoted names, snake_case, camelCase, dotted names, calls) and where
  each occurs in the diff: on added, removed or context lines, or nowhere;
* the change verbs of the claim (added, removed, renamed, changed, moved) next to what the diff shows, and
  the conflicts between the two ("says removed, but the diff removes nothing");
* hedging cues (likely, may, could, suggests, will affect, ...): a speculative claim is often about
  behaviour the diff alone cannot show;
* a cut-off cue: the claim stops mid-sentence;
* numbers of the claim against numbers of the diff (`compare_numbers`).

The claim-vs-diff check (judge/checks/claim_vs_diff/check.py) decides from these; the LLM
judge sees them as facts next to the fenced hunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from judge.checks.claim_vs_diff.features import DiffLines, claim_signals, pair_names
from judge.checks.claim_vs_diff.features_text import cut_off_score
from judge.checks.claim_vs_diff.payload import ClaimFacts
from judge.embeddings.encoder import Embedder
from judge.embeddings.shortlist import EMBED_ALL_UP_TO, shortlisted_similarity
from judge.models import Leaf
from judge.models.evidence import AlignedSnippet, DiffShortlist, LeafEvidence
from judge.submission.diff import Hunk, ParsedDiff
from judge.text.numeric_claims import compare_numbers

if TYPE_CHECKING:
    from judge.submission.view import SubmissionView

# Part of every cache key derived from these features: bump when a feature changes meaning.
CLAIM_FEATURES_VERSION = "claim-evidence-v2"
# Hunks up to this many body lines are one snippet; longer ones are cut into overlapping windows, so a
# claim about three lines of a 300-line hunk is not averaged away.
WHOLE_HUNK_LINES = 30
WINDOW_LINES = 12
WINDOW_STEP = 6
MAX_IDENTIFIERS = 12
DEFAULT_TOP_K = 3

_HEADER_START = re.compile(r"^(?:diff |--- |Index: )", re.MULTILINE)
_HUNK_START = re.compile(r"^@@ ")

_QUOTED = re.compile(r"`([^`\n]{1,120})`|(?<![\w])'([^'\n]{1,120}?)'(?![\w])|\"([^\"\n]{1,120})\"")
# A call is a name directly followed by "(": "save()" is code, "default (no modifier)" is prose.
_TOKEN = re.compile(r"(?<![\w.$])([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(\()?")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2,}[a-z]")
_ABBREVIATIONS = {"e.g", "i.e", "etc", "vs", "a.k.a"}

_VERBS: dict[str, re.Pattern[str]] = {
    "added": re.compile(
        r"\b(add(?:s|ed|ing|ition|itions|itional)?|introduc\w*|insert\w*|now (?:includes?|has|have"
        r"|contains?|imports?))\b", re.I),
    "removed": re.compile(r"\b(remov\w*|delet\w*|drop(?:s|ped)?|eliminat\w*|got rid|omit\w*)\b", re.I),
    "renamed": re.compile(r"\b(renam\w*)\b", re.I),
    "changed": re.compile(r"\b(chang\w*|modif\w*|updat\w*|replac\w*|switch\w*|instead of)\b", re.I),
    "moved": re.compile(r"\b(mov(?:e|ed|es|ing)|reposition\w*|relocat\w*|reorder\w*)\b", re.I),
}
_HEDGE = re.compile(
    r"\b(likely|unlikely|may|might|could|potentially|possibly|probably|perhaps|presumably|suggests?|suggesting"
    r"|impl(?:y|ies|ying)|indicat(?:e|es|ing)|seems?|appears? to|would|depending on|in the future"
    r"|will (?:affect|impact|lead|cause|result|break|improve|allow|make|help|need|require|be able|ensure)"
    r"|intended to|meant to|purpose)\b",
    re.I,
)
# A negation up to three words before a verb: "no longer being added", "was not removed".
_NEGATED = re.compile(r"(?:\b(?:not|never|no longer)|n't)\b(?:\s+\w+){0,3}\s*$", re.I)
_NO_LONGER = re.compile(r"\bno longer\b(?:\s+\w+){0,3}\s*$", re.I)
_OPPOSITE = {"added": "removed", "removed": "added"}
_FROM_TO = re.compile(r"\bfrom\s+([`'\"]?)([^\s`'\"]+)\1\s+to\s+([`'\"]?)([^\s`'\"]+)\3", re.I)
_WS = re.compile(r"\s+")


def ensure_diff_headers(diff: str, path: str = "snippet") -> str:
    """A diff that `parse_diff` accepts: bare hunks (no ---/+++ lines) get a synthetic file header.

    Review datasets such as CRScore hold single hunks without file headers. A diff that already has a
    header (or is empty) is returned unchanged.
    """
    stripped = diff.lstrip("\n")
    if not stripped.strip() or _HEADER_START.search(diff) or not _HUNK_START.match(stripped):
        return diff
    return f"--- a/{path}\n+++ b/{path}\n{stripped}"


def _body(hunk: Hunk) -> list[str]:
    return hunk.text.split("\n")[1:]


def diff_lines(diff: ParsedDiff) -> DiffLines:
    """Added, removed and context lines of every hunk of `diff`."""
    added: list[str] = []
    removed: list[str] = []
    context: list[str] = []
    files = list(dict.fromkeys(hunk.file_path for hunk in diff.hunks))
    for hunk in diff.hunks:
        added += hunk.added
        removed += hunk.removed
        section = hunk.header.split("@@")[-1].strip() if hunk.header.count("@@") >= 2 else ""
        if section:
            context.append(section)
        context += [line[1:] for line in _body(hunk) if line.startswith(" ")]
    return DiffLines(added=added, removed=removed, context=context, files=files)


def _looks_like_code(token: str, call: bool) -> bool:
    if token.lower().rstrip(".") in _ABBREVIATIONS:
        return False
    bare = token.strip("_$")
    return call or "_" in bare or "." in token or "$" in token or bool(_CAMEL.search(token))


def claim_identifiers(claim: str) -> list[str]:
    """Code names a claim mentions: quoted text, snake_case, camelCase, dotted names and calls (at most 12)."""
    found: list[str] = []
    for match in _QUOTED.finditer(claim):
        text = next(g for g in match.groups() if g is not None).strip()
        # One character or pure punctuation ("...") names nothing that can be looked up.
        if len(text) >= 2 and any(ch.isalnum() for ch in text):
            found.append(text)
    unquoted = _QUOTED.sub(" ", claim)
    for match in _TOKEN.finditer(unquoted):
        token, call = match.group(1), bool(match.group(2))
        if _looks_like_code(token, call):
            found.append(f"{token}()" if call else token)
    return list(dict.fromkeys(found))[:MAX_IDENTIFIERS]


def _variants(name: str) -> list[str]:
    out = [name, name.replace("\\n", "").replace("\\t", "")]
    bare = re.sub(r"\(.*\)$", "", name).strip()
    out.append(bare)
    if "." in bare and " " not in bare:
        out.append(bare.rsplit(".", 1)[-1])
    return [_WS.sub(" ", v).strip() for v in dict.fromkeys(out) if v.strip()]


def locate(name: str, lines: DiffLines) -> list[str]:
    """Where `name` occurs: a subset of ["added", "removed", "context"] (case-insensitive as a fallback), or
    ["file"] when it names only a file of the diff (its path, or the path's last parts)."""
    variants = _variants(name)
    kinds = ("added", "removed", "context")
    texts = {kind: lines.text(kind) for kind in kinds}
    where = [k for k in kinds if any(v in texts[k] for v in variants)]
    if where:
        return where
    lowered = [v.lower() for v in variants]
    where = [k for k in kinds if any(v in texts[k].lower() for v in lowered)]
    if not where and any(path == v or path.endswith("/" + v) for path in lines.files for v in variants):
        return ["file"]
    return where


def prose_of(claim: str) -> str:
    """The claim with quoted text and code names blanked out ("delete_files" is a name, not a verb)."""
    text = _QUOTED.sub(" ", claim)
    return _TOKEN.sub(lambda m: " " if _looks_like_code(m.group(1), bool(m.group(2))) else m.group(0), text)


def change_verbs(claim: str) -> list[str]:
    """The kinds of change a claim asserts in its prose: added, removed, renamed, changed, moved.

    "no longer added" asserts removed (and the reverse); any other negated verb ("was not removed",
    "doesn't rename") asserts nothing.
    """
    prose = prose_of(claim)
    found: set[str] = set()
    for kind, pattern in _VERBS.items():
        for match in pattern.finditer(prose):
            before = prose[: match.start()]
            if not _NEGATED.search(before):
                found.add(kind)
            elif kind in _OPPOSITE and _NO_LONGER.search(before):
                found.add(_OPPOSITE[kind])
    return [kind for kind in _VERBS if kind in found]


def _norm(line: str) -> str:
    return _WS.sub(" ", line).strip()


def diff_change_kinds(lines: DiffLines) -> list[str]:
    """The kinds of change a diff shows (blank lines ignored).

    added/removed: a non-blank added/removed line that is not also on the other side; changed: lines on
    both sides; moved: one non-blank line text both removed and added.
    """
    added = {_norm(line) for line in lines.added} - {""}
    removed = {_norm(line) for line in lines.removed} - {""}
    kinds = []
    if added - removed:
        kinds.append("added")
    if removed - added:
        kinds.append("removed")
    if added and removed:
        kinds.append("changed")
    if added & removed:
        kinds.append("moved")
    return kinds


def verb_conflicts(verbs: list[str], kinds: list[str], located: dict[str, list[str]], claim: str,
                   lines: DiffLines) -> list[str]:
    """Ways the change a claim asserts contradicts the change the diff shows (empty when none)."""
    conflicts: list[str] = []
    if "added" in verbs and not lines.added and "removed" not in verbs:
        conflicts.append("says added, but the diff adds no line")
    if "removed" in verbs and not lines.removed and "added" not in verbs:
        conflicts.append("says removed, but the diff removes no line")
    if "renamed" in verbs and not (lines.added and lines.removed):
        conflicts.append("says renamed, but the diff does not both remove and add lines")
    if "moved" in verbs and "moved" not in kinds:
        conflicts.append("says moved, but no line is both removed and added")
    placed = {name: where for name, where in located.items() if where and where != ["context"]}
    one_sided = {"added", "removed"} & set(verbs)
    if placed and len(one_sided) == 1 and not {"changed", "renamed", "moved"} & set(verbs):
        said = next(iter(one_sided))
        other = "removed" if said == "added" else "added"
        if all(other in where and said not in where for where in placed.values()):
            conflicts.append(f"says {said}, but the names it mentions are only on {other} lines")
    for match in _FROM_TO.finditer(claim):
        old, new = match.group(2).strip(".,;"), match.group(4).strip(".,;")
        old_at, new_at = locate(old, lines), locate(new, lines)
        if "added" in old_at and "removed" not in old_at and "removed" in new_at and "added" not in new_at:
            conflicts.append(f"says from {old} to {new}, but the diff goes from {new} to {old}")
    return conflicts


def hedging_cues(claim: str) -> list[str]:
    """Distinct speculation or hedging cues of a claim, lower-cased, in order of appearance."""
    return list(dict.fromkeys(m.group(0).lower() for m in _HEDGE.finditer(prose_of(claim))))


def claim_features(claim: str, lines: DiffLines, *, rel_tol: float = 0.0, abs_tol: float = 0.0) -> ClaimFacts:
    """The mechanical facts of a claim against a diff (see the module docstring); `hunks` is left at 0."""
    names = claim_identifiers(claim)
    located = {name: locate(name, lines) for name in names}
    verbs = change_verbs(claim)
    kinds = diff_change_kinds(lines)
    everything = "\n".join([*lines.added, *lines.removed, *lines.context])
    numeric = compare_numbers(claim, everything, rel_tol=rel_tol, abs_tol=abs_tol)
    absent = [name for name, where in located.items() if not where]
    where_of = {name: located.get(name) or locate(name, lines) for name in pair_names(claim)}
    signals = claim_signals(claim, prose_of(claim), verbs, located, where_of, lines)
    return ClaimFacts(
        cut_off=cut_off_score(claim),
        hedges=hedging_cues(claim),
        identifiers={name: "+".join(where) or "absent" for name, where in located.items()},
        absent_share=round(len(absent) / len(names), 4) if names else None,
        verbs=verbs,
        diff_shows=kinds,
        conflicts=verb_conflicts(verbs, kinds, located, claim, lines),
        numbers=numeric.status,
        number_details=list(numeric.details),
        signals=signals,
    )


def signal_names() -> tuple[str, ...]:
    """The names of the numeric signals `claim_features` stores in `ClaimFacts.signals`, in their fixed order."""
    return tuple(claim_signals("", "", [], {}, {}, DiffLines(added=[], removed=[], context=[])))


@dataclass(frozen=True)
class DiffWindow:
    """A candidate snippet: a whole hunk or a window of its lines."""

    hunk: Hunk
    start: int  # first body line (0-based)
    end: int  # one past the last body line
    text: str  # verbatim patch lines, as quoted
    embed_text: str  # what is embedded: the lines without their +/-/space markers

    @property
    def location(self) -> str:
        """File, hunk header and (for a window) the body lines it covers."""
        where = f"{self.hunk.file_path} {self.hunk.header}"
        body = len(_body(self.hunk))
        return where if (self.start, self.end) == (0, body) else f"{where} lines {self.start + 1}-{self.end}"


def diff_windows(diff: ParsedDiff) -> list[DiffWindow]:
    """Whole hunks up to WHOLE_HUNK_LINES body lines, else overlapping windows that hold a changed line."""
    out: list[DiffWindow] = []
    for hunk in diff.hunks:
        body = _body(hunk)
        if len(body) <= WHOLE_HUNK_LINES:
            spans = [(0, len(body))]
        else:
            starts = range(0, max(1, len(body) - WINDOW_LINES + WINDOW_STEP), WINDOW_STEP)
            spans = [(s, min(len(body), s + WINDOW_LINES)) for s in starts]
            spans = [(s, e) for s, e in spans if any(line[:1] in "+-" for line in body[s:e])] or [(0, len(body))]
        for start, end in spans:
            lines = body[start:end]
            text = hunk.text if (start, end) == (0, len(body)) else "\n".join(lines)
            section = hunk.header.split("@@")[-1].strip() if start == 0 else ""
            embed = "\n".join([section, *(line[1:] for line in lines)]).strip()
            out.append(DiffWindow(hunk=hunk, start=start, end=end, text=text, embed_text=embed or hunk.file_path))
    return out


def alignment_texts(leaves: list[Leaf], diff: ParsedDiff) -> list[str]:
    """The texts `build_claim_evidence` embeds for these leaves (lets a caller batch the encoding).

    A diff too big to embed whole is left to `build_claim_evidence`, which embeds its lexical shortlist
    in one call (choosing the shortlist here as well would run the tf-idf pass twice).
    """
    texts = [w.embed_text for w in diff_windows(diff)]
    return [leaf.target for leaf in leaves] + (texts if len(texts) <= EMBED_ALL_UP_TO else [])


@dataclass(frozen=True)
class ClaimEvidenceSettings:
    """Per leaf: how many windows it is shown, and the numeric tolerances of its number check."""

    top_k: int = DEFAULT_TOP_K
    rel_tol: float = 0.0
    abs_tol: float = 0.0


def build_claim_evidence(embedder: Embedder, leaves: list[Leaf], view: SubmissionView,
                         settings: list[ClaimEvidenceSettings]) -> list[LeafEvidence]:
    """Evidence of claim-vs-diff leaves against the diff of a submission view.

    Args:
        embedder: Sentence embeddings for aligning the claim with hunks.
        leaves: Leaves whose check is "claim_vs_diff"; each leaf's target is the claim.
        view: The parsed submission (only its diff is read).
        settings: One per leaf (from the leaf's check arguments).

    Returns:
        One LeafEvidence per leaf: up to `top_k` snippets, best aligned first, and the facts of
        `claim_features` with the number of hunks and, for a diff too big to embed whole, its shortlist.
    """
    diff = view.diff
    windows = diff_windows(diff)
    lines = diff_lines(diff)
    # a huge diff: only the windows a lexical pass chose are embedded; the others rank last
    sims, embedded = shortlisted_similarity(embedder, [leaf.target for leaf in leaves],
                                            [w.embed_text for w in windows])
    shortlist = DiffShortlist(unit="windows", in_diff=len(windows), embedded=embedded)
    result: list[LeafEvidence] = []
    for row, (leaf, setting) in enumerate(zip(leaves, settings, strict=True)):
        order = sorted(range(len(windows)), key=lambda c: -float(sims[row, c]))[:setting.top_k]
        facts = claim_features(leaf.target, lines, rel_tol=setting.rel_tol, abs_tol=setting.abs_tol).model_copy(
            update={"hunks": len(diff.hunks), "diff_shortlist": shortlist})
        snippets = [AlignedSnippet(source="diff", text=windows[col].text, location=windows[col].location,
                                   similarity=float(sims[row, col])) for col in order]
        result.append(LeafEvidence(leaf=leaf, snippets=snippets, facts=facts))
    return result
