"""A conclusion sentence that holds several claims, cut into one clause per claim.

An agent may state every expected result in one long sentence ("JSD matched the MD runs: torsion JSD was about
0.1, the TICA-0 distribution deviated slightly more than the torsions, and the samples captured ..."). Read as one
unit, that sentence matches each claim a little and none well, its numbers are paired across claims, and a
comparative word about one subject ("more" of TICA-0) reads as the opposite of another claim's ("0.1 or lower").
Cut into clauses, each claim is aligned to, and its numbers and direction read in, the clause about its subject,
as it would be were the sentence written as several.

A clause boundary is a semicolon, a colon before a clause, a comma before a coordinating word that starts a new
statement ("and", "while", "whereas", "with", "plus"), or a comma before a determiner that starts a new subject in
a list ("..., the TICA-0 distribution ..."). A piece shorter than `MIN_CLAUSE_WORDS` words is no claim on its own
and stays with its neighbour, so an ordinary sentence ("X improved, and so did Y") is left whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_CLAUSE_WORDS = 5
_BOUNDARY = re.compile(
    r";\s+"
    r"|:\s+(?=[A-Za-z])"
    r"|,\s+(?=(?:and|while|whereas|with|plus|as\s+well\s+as)\s+\S)"
    r"|,\s+(?=(?:the|a|an|its|their|our|each|every|both|all)\s+\S)",
    re.I,
)
_LEADING_CONNECTOR = re.compile(r"^(?:and|while|whereas|with|plus|as\s+well\s+as)\s+", re.I)


def _words(text: str) -> int:
    return len(_LEADING_CONNECTOR.sub("", text).split())


def split_clauses(sentence: str) -> list[str]:
    """The clauses of `sentence` that each can hold a claim, verbatim and in order; `[sentence]` when it has one.

    Args:
        sentence: One conclusion sentence.

    Returns:
        Substrings of `sentence` (connectors kept, so each is quoted as written), each at least
        `MIN_CLAUSE_WORDS` words long after its leading connector.
    """
    pieces: list[str] = []
    start = 0
    for boundary in _BOUNDARY.finditer(sentence):
        pieces.append(sentence[start:boundary.start()].strip())
        start = boundary.end()
    pieces.append(sentence[start:].strip())
    merged: list[str] = []
    for piece in (p for p in pieces if p):
        if merged and (_words(piece) < MIN_CLAUSE_WORDS or _words(merged[-1]) < MIN_CLAUSE_WORDS):
            merged[-1] = _rejoin(sentence, merged[-1], piece)
        else:
            merged.append(piece)
    return merged if len(merged) > 1 else [sentence]


def _rejoin(sentence: str, first: str, second: str) -> str:
    """`first` and `second` with what stood between them in `sentence` (so the result is still a substring)."""
    at = sentence.find(first)
    end = sentence.find(second, at + len(first))
    return sentence[at:end + len(second)] if at >= 0 and end >= 0 else f"{first} {second}"


@dataclass(frozen=True)
class ClauseUnit:
    """One unit a claim is aligned to: a whole sentence, or one clause of a sentence holding several claims.

    Attributes:
        text: The clause, verbatim.
        location: "sentence 2" when whole, "sentence 2, clause 1" when cut.
        sentence: Index of the sentence it comes from (its modality is the sentence's).
    """

    text: str
    location: str
    sentence: int


def clause_units(sentences: list[str]) -> list[ClauseUnit]:
    """Every sentence's clauses, in order (a sentence with one clause stays whole).

    Args:
        sentences: The conclusion's sentences, in order.
    """
    units: list[ClauseUnit] = []
    for index, sentence in enumerate(sentences):
        clauses = split_clauses(sentence)
        if len(clauses) == 1:
            units.append(ClauseUnit(sentence, f"sentence {index + 1}", index))
        else:
            units += [ClauseUnit(clause, f"sentence {index + 1}, clause {k}", index)
                      for k, clause in enumerate(clauses, start=1)]
    return units
