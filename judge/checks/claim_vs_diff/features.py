"""Numeric signals of a claim against a diff: what the claim asserts, held against what each side shows.

`claim_signals` returns a flat dict of floats (JSON-ready, rounded), the features a learned decision of the
claim-vs-diff check reads (`judge.checks.claim_vs_diff.check.claim_feature_vector`). Every signal is about the
relation between the claim and the lines, never about one labelled set:

* direction: the claim's change verbs (added, removed, changed, renamed, moved) against what the diff does,
  and the named items against the side they are on ("adds X" with X only on removed lines, "removes X"
  with X only added, "adds X" when X was already there on context lines, "removes X" when X is still on
  added lines);
* names, values and files by side: the share of the claim's code names (and quoted values) on added-only,
  removed-only, both, context-only lines, and nowhere; words of the claim split into sub-words
  (`getRequestBody` -> get, request, body) on each side, and those the diff has nowhere;
* old/new pairs ("renamed A to B", "from A to B", "replaced A with B"): supported (A removed, B added),
  reversed, or not a change (B already on context lines, A still added);
* counts ("two new lines", "one import"): the number of such lines on the side the claim puts them;
* code kinds (imports, comments, blank lines, definitions, conditions, ...): whether a changed line of that
  kind exists on the claimed side, or anywhere in the hunk;
* what the diff alone cannot show (`judge.checks.claim_vs_diff.features_text.CUE_FAMILIES`): speculation,
  inference, effects, intent, evaluation, scope outside the lines shown; per family and how many sentences
  carry one; claim length;
* the shape of the diff: how many lines are added, removed and kept, whitespace-only changes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from judge.checks.claim_vs_diff.features_text import (
    CUE_NAMES,
    ClaimedCount,
    claimed_counts,
    cue_counts,
    line_kinds,
    mentioned_kinds,
    old_new_pairs,
    sentences,
)


@dataclass(frozen=True)
class DiffLines:
    """Every line of a diff by kind, markers removed; `context` also holds hunk headers' section text."""

    added: list[str]
    removed: list[str]
    context: list[str]
    files: list[str] = field(default_factory=list)

    def text(self, kind: str) -> str:
        """The lines of one kind joined, whitespace collapsed (for substring search)."""
        return _WS.sub(" ", "\n".join(getattr(self, kind)))


Where = Sequence[str]
_SUBWORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_STOP = frozenset({
    "the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "with", "by", "from", "as", "at", "is", "are",
    "was", "were", "be", "been", "being", "has", "have", "had", "it", "its", "this", "that", "these", "those",
    "which", "who", "what", "when", "where", "while", "not", "no", "now", "new", "also", "only", "than", "then",
    "there", "their", "them", "they", "into", "out", "over", "under", "about", "after", "before", "between",
    "each", "other", "some", "such", "more", "most", "less", "very", "can", "will", "would", "should", "could",
    "may", "might", "must", "does", "did", "do", "done", "code", "line", "lines", "change", "changes", "changed",
    "diff", "added", "removed", "modified", "function", "method", "class", "variable", "value", "values", "call",
    "calls", "called", "file", "same", "used", "uses", "use", "using", "instead"
})
_WS = re.compile(r"\s+")


def subwords(text: str) -> set[str]:
    """Lower-case sub-words of a text (identifiers split at case changes, underscores and punctuation),
    at least three characters, common English and code-review words left out."""
    words = {w.lower() for w in _SUBWORD.findall(text)}
    return {w for w in words if len(w) >= 3 and w not in _STOP}


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _sides(located: dict[str, list[str]]) -> dict[str, float]:
    n = len(located)
    groups = {"added_only": ["added"], "removed_only": ["removed"], "context_only": ["context"]}
    out = {f"names_{key}": _share(sum(1 for w in located.values() if w == value), n) for key, value in groups.items()}
    out["names_both_sides"] = _share(sum(1 for w in located.values() if "added" in w and "removed" in w), n)
    out["names_absent"] = _share(sum(1 for w in located.values() if not w), n)
    out["names_count"] = math.log1p(n)
    return out


def direction_signals(verbs: Sequence[str], located: dict[str, list[str]], lines: DiffLines) -> dict[str, float]:
    """Conflicts between the direction a claim asserts and the side its named items are on."""
    says = set(verbs)
    one_way = {"added", "removed"} & says
    only = next(iter(one_way)) if len(one_way) == 1 and not {"changed", "renamed", "moved"} & says else None
    placed = {name: where for name, where in located.items() if where}
    out = {"says_added": float("added" in says), "says_removed": float("removed" in says),
           "says_changed": float("changed" in says), "says_renamed": float("renamed" in says),
           "says_moved": float("moved" in says)}
    out["verb_added_no_added_lines"] = float("added" in says and not _nonblank(lines.added))
    out["verb_removed_no_removed_lines"] = float("removed" in says and not _nonblank(lines.removed))
    out["verb_changed_one_sided"] = float(bool({"changed", "renamed"} & says)
                                          and not (_nonblank(lines.added) and _nonblank(lines.removed)))
    n = len(placed)
    if only == "added":
        out["names_wrong_side"] = _share(sum(1 for w in placed.values() if "added" not in w), n)
        out["names_not_new"] = _share(sum(1 for w in placed.values() if "added" in w and len(w) > 1), n)
    elif only == "removed":
        out["names_wrong_side"] = _share(sum(1 for w in placed.values() if "removed" not in w), n)
        out["names_not_new"] = _share(sum(1 for w in placed.values() if "removed" in w and "added" in w), n)
    else:
        out["names_wrong_side"] = out["names_not_new"] = 0.0
    return out


def _nonblank(lines: Sequence[str]) -> list[str]:
    return [line for line in lines if line.strip()]


def pair_signals(claim: str, where_of: dict[str, list[str]]) -> dict[str, float]:
    """Old/new pairs of the claim against the sides: supported, reversed, or not a change."""
    pairs = old_new_pairs(claim)
    supported = reversed_ = stale = 0
    for pair in pairs:
        old, new = where_of[pair.old], where_of[pair.new]
        if "added" in old and "removed" in new and "added" not in new:
            reversed_ += 1
        elif "removed" in old and "added" in new and "added" not in old and "context" not in new:
            supported += 1
        else:  # a side missing, the old still added, or the new already there before the change
            stale += 1
    return {"pairs": float(len(pairs)), "pairs_supported": float(supported), "pairs_reversed": float(reversed_),
            "pairs_unsupported": float(stale)}


def _counted_lines(count: ClaimedCount, lines: Sequence[str]) -> int:
    if count.kind == "line":
        return sum(1 for line in lines if (not line.strip()) == count.blank)
    if count.kind == "parameter":
        return -1  # parameters are not counted from lines; the count is not checked
    return sum(1 for line in lines if count.kind in line_kinds(line))


def count_signals(prose: str, verbs: Sequence[str], lines: DiffLines) -> dict[str, float]:
    """Counts the claim states against the number of such lines on the side it puts them."""
    side = _claimed_side(verbs, lines)
    match = mismatch = 0
    for count in claimed_counts(prose):
        found = _counted_lines(count, side)
        if found < 0:
            continue
        if found == count.count:
            match += 1
        else:
            mismatch += 1
    return {"counts_match": float(match), "counts_mismatch": float(mismatch)}


def _claimed_side(verbs: Sequence[str], lines: DiffLines) -> list[str]:
    says = set(verbs)
    if "added" in says and "removed" not in says:
        return lines.added
    if "removed" in says and "added" not in says:
        return lines.removed
    return [*lines.added, *lines.removed]


def kind_signals(prose: str, verbs: Sequence[str], lines: DiffLines) -> dict[str, float]:
    """Code kinds the claim talks about that no changed line on its side (or no line at all) is."""
    kinds = mentioned_kinds(prose)
    side = {k for line in _claimed_side(verbs, lines) for k in line_kinds(line)}
    anywhere = side | {k for line in [*lines.added, *lines.removed, *lines.context] for k in line_kinds(line)}
    return {"kinds_mentioned": float(len(kinds)),
            "kinds_missing_on_side": float(sum(1 for k in kinds if k not in side)),
            "kinds_missing_anywhere": float(sum(1 for k in kinds if k not in anywhere))}


def lexical_signals(claim: str, lines: DiffLines) -> dict[str, float]:
    """Sub-words of the claim found on each side of the diff, and those the diff has nowhere."""
    words = subwords(claim)
    added, removed = subwords(" ".join(lines.added)), subwords(" ".join(lines.removed))
    context = subwords(" ".join(lines.context))
    n = len(words)
    return {"words": math.log1p(n),
            "words_added": _share(len(words & added), n), "words_removed": _share(len(words & removed), n),
            "words_added_only": _share(len(words & (added - removed - context)), n),
            "words_removed_only": _share(len(words & (removed - added - context)), n),
            "words_context": _share(len(words & context), n),
            "words_nowhere": _share(len(words - added - removed - context), n)}


def diff_shape(lines: DiffLines) -> dict[str, float]:
    """How much the diff adds, removes and keeps; whether its changes are whitespace only."""
    added, removed = _nonblank(lines.added), _nonblank(lines.removed)
    return {"diff_added": math.log1p(len(added)), "diff_removed": math.log1p(len(removed)),
            "diff_context": math.log1p(len(_nonblank(lines.context))),
            "diff_pure_addition": float(bool(added) and not removed),
            "diff_pure_removal": float(bool(removed) and not added),
            "diff_blank_only": float(not added and not removed and bool(lines.added or lines.removed)),
            "diff_whitespace_only": float(bool(added or removed) and _squashed(added) == _squashed(removed))}


def _squashed(rows: Sequence[str]) -> list[str]:
    return sorted(_WS.sub("", row) for row in rows)


def cue_signals(claim: str, prose: str) -> dict[str, float]:
    """Cue families of the claim (how many distinct cues each), sentences with a cue, the claim's length."""
    counts = cue_counts(prose)
    parts = sentences(prose) or [prose]
    cued = sum(1 for part in parts if any(cue_counts(part).values()))
    out = {f"cue_{name}": float(min(counts[name], 3)) for name in CUE_NAMES}
    first = cue_counts(parts[0])
    out["cue_first_sentence"] = float(sum(first.values()) > 0)
    out["cue_sentence_share"] = _share(cued, len(parts))
    out["sentences"] = float(min(len(parts), 5))
    out["claim_words"] = math.log1p(len(claim.split()))
    return out


def claim_signals(claim: str, prose: str, verbs: Sequence[str], located: dict[str, list[str]],
                  where_of: dict[str, list[str]], lines: DiffLines) -> dict[str, float]:
    """Every signal above for one claim, rounded to 4 decimals (see the module docstring).

    Args:
        claim: The claim text.
        prose: The claim with code names blanked (`claim_evidence.prose_of`).
        verbs: The change verbs it asserts (`claim_evidence.change_verbs`).
        located: Its code names and where each is (`claim_evidence.locate`).
        where_of: Where any name of its old/new pairs is (same lookup as `located`, for those names).
        lines: The diff's lines by side.
    """
    out: dict[str, float] = {}
    for part in (_sides(located), direction_signals(verbs, located, lines), pair_signals(claim, where_of),
                 count_signals(prose, verbs, lines), kind_signals(prose, verbs, lines),
                 lexical_signals(claim, lines), diff_shape(lines), cue_signals(claim, prose)):
        out.update(part)
    return {key: round(float(value), 4) for key, value in out.items()}


def pair_names(claim: str) -> list[str]:
    """The names of the claim's old/new pairs, to be located on the diff's sides."""
    return list(dict.fromkeys(name for pair in old_new_pairs(claim) for name in (pair.old, pair.new)))
