"""What matched and what did not, in words, for the rationale of a learned decision.

A model's features say how much of the reference span the code holds; a reviewer wants to know which calls,
values and names those are. `match_words(check_name, evidence)` reads them back from the leaf's evidence
(its best acting code unit, its reference span, the requirement's text, a claim's facts), so a rationale can
say "shares the calls softmax, cross_entropy with the reference span train.py:20-31; lacks clip_grad_norm_".
A check this module does not know gets no such words ("").
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from judge.checks.claim_vs_diff.payload import ClaimFacts
from judge.checks.requirement.payload import RequirementFacts, UnitMeta
from judge.models.evidence import AlignedSnippet, LeafEvidence
from judge.submission.code_terms import stem
from judge.submission.distinguishing import evidence_terms, name_terms, requirement_terms
from judge.submission.view import requirement_text

if TYPE_CHECKING:
    from judge.reference.behaviour import Behaviour

_SHOWN = 3
_ITEM = 24  # characters of a call or value shown (a long string literal is cut)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{3,}")
# Code texts whose behaviour is kept: a leaf's words are asked for by its reason and its rationale, and a
# reference span or a unit is often the best of several leaves.
_BEHAVIOURS_KEPT = 256


def listed(items: Iterable[str], limit: int = _SHOWN) -> str:
    """Up to `limit` items joined by commas, with how many more there are ("a, b, c and 2 more")."""
    items = list(items)
    head = ", ".join(items[:limit])
    return f"{head} and {len(items) - limit} more" if len(items) > limit else head


def _language(path: str) -> str:
    return "python" if path.split(":", 1)[0].split(" ", 1)[0].endswith(".py") else "other"


def _names(bag: Counter[str]) -> list[str]:
    """Call or value items as code a reader can tell from the prose: `.softmax` -> `softmax`, each once, in
    first-seen order."""
    names = (item.lstrip(".") for item in bag if item.strip("."))
    return list(dict.fromkeys(f"`{name if len(name) <= _ITEM else name[:_ITEM - 1] + '…'}`" for name in names))


def _best_code(evidence: LeafEvidence) -> AlignedSnippet | None:
    return next((s for s in evidence.snippets if isinstance(s.meta, UnitMeta) and s.meta.code), None)


@functools.lru_cache(maxsize=_BEHAVIOURS_KEPT)
def _read_behaviour(text: str, language: str) -> Behaviour:
    """The behaviour of a code text, read once (shared: callers only read it)."""
    from judge.reference.behaviour import behaviour_of  # tree-sitter: loaded on use

    return behaviour_of(text, language)


def _against_reference(evidence: LeafEvidence, code: AlignedSnippet) -> str:
    span = evidence.reference
    if span is None:
        return ""
    wanted = _read_behaviour(span.text, _language(span.file))
    have = _read_behaviour(code.text, _language(code.location or ""))
    parts = []
    shared, lacking = [], []
    for what, mine, theirs in (("calls", have.calls, wanted.calls), ("values", have.literals, wanted.literals)):
        names, own = _names(theirs), set(_names(mine))
        found = [n for n in names if n in own]
        missing = [n for n in names if n not in own]
        shown = _SHOWN if what == "calls" else _SHOWN - 1
        if found:
            shared.append(f"the {what} {listed(found, shown)}")
        if missing:
            lacking.append(f"the {what} {listed(missing, shown)}")
    where = f"the reference span {span.file}:{span.start_line}-{span.end_line}"
    if shared:
        parts.append(f"shares {' and '.join(shared)} with {where}")
    else:
        parts.append(f"shares no call or value with {where}")
    if lacking:
        parts.append(f"lacks {' and '.join(lacking)}")
    return "; ".join(parts)


def _requirement_words(target: str) -> tuple[str, list[tuple[str, str]]]:
    """The names the requirement mentions, else its content words: (kind, [(shown, term checked)])."""
    names = sorted(name_terms(target))
    if names:
        return "names", [(n, n) for n in names]
    terms = requirement_terms(target)
    words = dict.fromkeys(w.lower() for w in _WORD.findall(target))
    return "words", [(w, stem(w)) for w in words if stem(w) in terms]


def _against_requirement(evidence: LeafEvidence, code: AlignedSnippet) -> str:
    kind, wanted = _requirement_words(requirement_text(evidence.leaf.target))
    if not wanted:
        return ""
    terms = evidence_terms([code.text + "\n" + (code.location or "")])
    found = [shown for shown, term in wanted if terms.has(term)]
    missing = [shown for shown, term in wanted if not terms.has(term)]
    parts = [f"has the requirement's {kind} {listed(found)}" if found else f"has none of the requirement's {kind}"]
    if missing:
        parts.append(f"lacks {listed(missing)}")
    return "; ".join(parts)


def requirement_match_words(evidence: LeafEvidence) -> str:
    """Which calls and values of the reference span (with a reference), else which names or words of the
    requirement, the leaf's best acting code unit holds and lacks ("" without an acting unit)."""
    code = _best_code(evidence)
    if code is None or not isinstance(evidence.facts, RequirementFacts):
        return ""
    if evidence.facts.reference_mode:
        return _against_reference(evidence, code)
    return _against_requirement(evidence, code)


def claim_match_words(evidence: LeafEvidence) -> str:
    """Which code names of a claim the diff has and lacks, and whether its numbers are there."""
    if not isinstance(evidence.facts, ClaimFacts):
        return ""
    facts = evidence.facts
    found = [n for n, where in facts.identifiers.items() if where != "absent"]
    absent = [n for n, where in facts.identifiers.items() if where == "absent"]
    parts = []
    if found:
        parts.append(f"the diff has {listed(found)}")
    if absent:
        parts.append(f"lacks {listed(absent)}")
    if facts.numbers == "mismatch":
        parts.append("its numbers are not in the diff")
    return "; ".join(parts)


MATCH_WORDS: dict[str, Callable[[LeafEvidence], str]] = {
    "requirement_in_diff": requirement_match_words,
    "claim_vs_diff": claim_match_words,
}


def match_words(check_name: str, evidence: LeafEvidence) -> str:
    """What matched and what did not for a leaf of `check_name`, in words ("" for a check without words)."""
    explain = MATCH_WORDS.get(check_name)
    return explain(evidence) if explain is not None else ""
