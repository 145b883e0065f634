"""What a claim about a diff says, read from its text alone: cues, counts, code kinds and old/new pairs.

These are the claim-side halves of the checks in `judge.checks.claim_vs_diff.features`, which holds them against
the diff's added, removed and context lines. Nothing here looks at a diff.

* Cue families (`cue_counts`): words that mark a claim the lines of a diff cannot settle by themselves:
  speculation ("may", "could", "potentially"), inference ("suggests", "implies"), effects ("will affect",
  "this could lead to"), intent ("in order to", "the purpose"), evaluation ("more readable", "improves
  performance", "fixes a bug") and scope outside the lines shown ("callers", "elsewhere", "the rest of the
  codebase").
* Counts (`claimed_counts`): "two new lines", "a single import statement", "3 parameters".
* Code kinds (`mentioned_kinds`): the kinds of code a claim talks about (imports, comments, blank lines,
  methods, parameters, conditions, ...), matched by words; `LINE_KINDS` recognises the same kinds on a line
  of code (Python, Java, JavaScript and C-like syntax).
* A cut-off score (`cut_off_score`): the claim stops mid-sentence.
* Old/new pairs (`old_new_pairs`): "renamed A to B", "changed from A to B", "replaced A with B",
  "A instead of B": A should be on removed lines and B on added ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CUE_FAMILIES: dict[str, re.Pattern[str]] = {
    "speculation": re.compile(
        r"\b(may|might|could|potentially|possibly|probably|likely|unlikely|perhaps|presumably|would|can"
        r" potentially|it is possible|depending on)\b", re.I),
    "inference": re.compile(
        r"\b(suggests?|suggesting|impl(?:y|ies|ying)|indicat(?:e|es|ing)|seems?|appears? to|hints?|means? that"
        r"|this means|signals?)\b", re.I),
    "effect": re.compile(
        r"\b(will (?:affect|impact|lead|cause|result|break|improve|allow|make|help|need|require|be able|ensure"
        r"|change|prevent|reduce|increase|not affect)|(?:could|may|might|can) (?:affect|impact|lead|cause|result"
        r"|break|introduce)|affects?|impacts?|side effects?|behaviou?r|in the future)\b", re.I),
    "intent": re.compile(
        r"\b(intended|intention|meant to|purpose|in order to|so that|aims?|goal|to ensure|to make sure|to avoid"
        r"|to prevent|to allow|rationale|reason for|was done to|developer|programmer)\b", re.I),
    "evaluation": re.compile(
        r"\b(readab\w*|maintainab\w*|efficien\w*|performance|faster|slower|robust\w*|cleaner|simpler|simplif\w*"
        r"|better|improv\w*|optimi[sz]\w*|bugs?|fix(?:es|ed)?|correct(?:ly|ness)|properly|safer|secur\w*"
        r"|error-prone|best practices?|consisten\w*|clarity|clearer|unnecessary|redundant|typo)\b", re.I),
    "scope": re.compile(
        r"\b(callers?|caller's|elsewhere|other parts?|rest of the (?:code|codebase|program|system|application)"
        r"|codebase|throughout|everywhere|all (?:places|instances|usages|uses|calls)|instances where|users?"
        r"|clients?|downstream|other (?:modules?|classes|files|functions|methods|code)|the system"
        r"|the application)\b", re.I),
}
CUE_NAMES: tuple[str, ...] = tuple(CUE_FAMILIES)

# Kinds of code a claim can name, each with the words that name it and a pattern for a line that is one.
_KIND_WORDS: dict[str, str] = {
    "import": r"\bimport(?:s|ed|ing)?\b|\bmodules?\b|\blibrar(?:y|ies)\b|\bdependenc\w*",
    "comment": r"\bcomments?\b|\bcommented\b|\bdocstrings?\b|\bjavadoc\b|\bdocumentation\b|\btodo\b",
    "blank": r"\b(?:blank|empty|new) ?lines?\b|\bwhitespace\b|\bline breaks?\b|\bindentation\b|\bformatting\b",
    "definition": r"\b(?:methods?|functions?|constructors?|procedures?|def)\b",
    "class": r"\bclass(?:es)?\b|\binterfaces?\b|\benums?\b",
    "annotation": r"\bannotations?\b|\bannotated\b|\bdecorators?\b|\bdecorated\b",
    "return": r"\breturn(?:s|ed|ing)?\b",
    "condition": r"\bconditions?\b|\bconditional\b|\bif(?:-| )statements?\b|\bif\b|\belse\b|\bchecks? (?:if|whether)",
    "loop": r"\bloops?\b|\biterat\w*|\bfor each\b",
    "exception": r"\bexceptions?\b|\berrors? handling\b|\braises?\b|\bthrows?\b|\btry\b|\bcatch\w*",
    "logging": r"\blog(?:s|ged|ging|ger)?\b|\bprint(?:s|ed|ing|ln)?\b|\bwarnings?\b",
    "test": r"\btests?\b|\btesting\b|\bassert\w*",
    "string": r"\bstrings?\b|\bmessages?\b|\btext\b",
}
KIND_NAMES: tuple[str, ...] = tuple(_KIND_WORDS)
KIND_WORDS: dict[str, re.Pattern[str]] = {kind: re.compile(words, re.I) for kind, words in _KIND_WORDS.items()}
LINE_KINDS: dict[str, re.Pattern[str]] = {
    "import": re.compile(r"^\s*(?:import\s|from\s+[\w.]+\s+import\b|#\s*include\b|using\s+[\w.]+\s*;|package\s"
                         r"|.*\brequire\s*\()"),
    "comment": re.compile(r"^\s*(?:#(?!\s*include)|//|/\*|\*|\"\"\"|''')|\s(?:#|//)\s"),
    "blank": re.compile(r"^\s*$"),
    "definition": re.compile(
        r"^\s*(?:async\s+)?def\s+\w+|\bfunction\b\s*\w*\s*\(|^\s*(?:(?:public|private|protected|static|final"
        r"|abstract|synchronized|native|default|override)\s+)*[\w<>\[\],.?]+\s+\w+\s*\([^;=]*\)\s*(?:\{|throws"
        r"|$)|=>\s*\{?"),
    "class": re.compile(r"\b(?:class|interface|enum|struct|record)\s+\w+"),
    "annotation": re.compile(r"^\s*@\w+"),
    "return": re.compile(r"\breturn\b"),
    "condition": re.compile(r"\b(?:if|elif|else|switch|case|unless)\b|\?[^:]*:|\bwhen\s*\("),
    "loop": re.compile(r"\b(?:for|while|foreach|do)\b\s*[(\w]|\.forEach\s*\(|\.stream\(\)"),
    "exception": re.compile(r"\b(?:try|catch|except|finally|raise|throw|throws)\b|Exception\b|Error\b"),
    "logging": re.compile(r"\b(?:log|logger|logging|LOG|LOGGER|print|println|printf|console\.\w+|warn\w*)\b"),
    "test": re.compile(r"\b(?:assert\w*|test\w*|expect|should|mock\w*)\b|@Test\b", re.I),
    "string": re.compile(r"\"[^\"]*\"|'[^']*'"),
}

_NUMBER_WORDS = {"a single": 1, "single": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                 "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a pair of": 2}
_COUNTED = {
    "line": r"lines?(?: of code)?", "import": r"imports?|import statements?", "definition": r"methods?|functions?",
    "parameter": r"parameters?|arguments?|params?", "annotation": r"annotations?|decorators?",
}
_COUNT = re.compile(
    r"\b(?P<n>a single|a couple of|a pair of|single|one|two|three|four|five|six|seven|eight|nine|ten|\d{1,3})\s+"
    r"(?:(?:new|more|additional|extra|separate|different|blank|empty|other|removed|added|deleted|consecutive)\s+)?"
    r"(?P<what>" + "|".join(f"(?P<{k}>{v})" for k, v in _COUNTED.items()) + r")\b", re.I)
_BLANK_COUNT = re.compile(r"\b(?:blank|empty|new)\s+lines?\b", re.I)

_NAME = r"[`'\"]?([A-Za-z_$][\w$.]*(?:\(\))?|[\w.$-]+)[`'\"]?"
_PAIRS: tuple[tuple[re.Pattern[str], bool], ...] = (
    # (pattern, whether group 1 is the old side)
    (re.compile(rf"{_NAME}\s+(?:is|was|are|were|has been|have been|gets|got)\s+renamed\s+(?:to|into|as)\s+{_NAME}",
                re.I), True),
    (re.compile(rf"\brenam\w*\s+(?:\w+\s+){{0,3}}?(?:from\s+)?{_NAME}\s+(?:to|into|as)\s+{_NAME}", re.I), True),
    (re.compile(rf"\bfrom\s+{_NAME}\s+to\s+{_NAME}", re.I), True),
    (re.compile(rf"\breplac\w*\s+(?:\w+\s+){{0,3}}?{_NAME}\s+(?:with|by)\s+{_NAME}", re.I), True),
    (re.compile(rf"{_NAME}\s+(?:is|are|was|were|has been|have been)?\s*(?:now\s+)?used\s+instead\s+of\s+{_NAME}",
                re.I), False),
    (re.compile(rf"{_NAME}\s+instead\s+of\s+{_NAME}", re.I), False),
)
_TERMINAL = ".!?"
_CLOSERS = "\"'`)]}"
_DANGLING = {
    "a", "an", "the", "of", "to", "in", "on", "for", "with", "and", "or", "but", "that", "which", "as", "by",
    "from", "is", "are", "was", "were", "be", "been", "will", "can", "could", "would", "should", "may",
    "might", "it", "its", "this", "these", "those", "their", "if", "when", "than", "because", "into", "such",
    "not", "now", "has", "have", "more", "less", "also", "so", "at", "where", "while", "whether", "then",
}
_WORD = re.compile(r"[A-Za-z]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`'\"(])")
_FILLER = {"the", "a", "an", "this", "that", "it", "its", "be", "is", "was", "now", "new", "old", "value",
           "name", "method", "function", "variable", "parameter", "class", "field", "line", "lines", "code", "used",
           "renamed", "changed"}


@dataclass(frozen=True)
class ClaimedCount:
    """A count a claim states: how many of which kind ("two lines" -> 2, "line")."""

    count: int
    kind: str
    blank: bool


@dataclass(frozen=True)
class OldNew:
    """An old/new pair a claim states: `old` should be on removed lines, `new` on added ones."""

    old: str
    new: str


def sentences(claim: str) -> list[str]:
    """The claim's sentences (split after . ! ? before a capital or quote)."""
    return [s for s in _SENTENCE.split(claim.strip()) if s.strip()]


def cue_counts(prose: str) -> dict[str, int]:
    """Distinct cue words of each family (`CUE_FAMILIES`) in the claim's prose (code names blanked)."""
    return {name: len({m.group(0).lower() for m in pattern.finditer(prose)}) for name, pattern in CUE_FAMILIES.items()}


def mentioned_kinds(prose: str) -> list[str]:
    """The code kinds (`KIND_NAMES`) the claim's prose talks about."""
    return [kind for kind, pattern in KIND_WORDS.items() if pattern.search(prose)]


def claimed_counts(prose: str) -> list[ClaimedCount]:
    """The counts the claim states ("two new lines", "a single import statement"), in order."""
    out = []
    for match in _COUNT.finditer(prose):
        word = match.group("n").lower()
        count = int(word) if word.isdigit() else _NUMBER_WORDS[word]
        kind = next(k for k in _COUNTED if match.group(k))
        out.append(ClaimedCount(count=count, kind=kind, blank=bool(_BLANK_COUNT.search(match.group(0)))))
    return out


def _clean(name: str) -> str:
    return name.strip("`'\".,;:()").removesuffix("()")


def old_new_pairs(claim: str) -> list[OldNew]:
    """Old/new pairs the claim states, old side first (see the module docstring)."""
    out: list[OldNew] = []
    seen: set[tuple[str, str]] = set()
    taken: list[tuple[int, int]] = []  # spans an earlier (more specific) pattern already read
    for pattern, old_first in _PAIRS:
        for match in pattern.finditer(claim):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            taken.append(match.span())
            first, second = _clean(match.group(1)), _clean(match.group(2))
            old, new = (first, second) if old_first else (second, first)
            if not old or not new or old.lower() in _FILLER or new.lower() in _FILLER or old == new:
                continue
            if (old, new) not in seen:
                seen.add((old, new))
                out.append(OldNew(old=old, new=new))
    return out


def line_kinds(line: str) -> set[str]:
    """The code kinds (`LINE_KINDS`) one line of code is."""
    return {kind for kind, pattern in LINE_KINDS.items() if pattern.search(line)}


def cut_off_score(claim: str) -> float:
    """How strongly a claim looks cut off mid-sentence: 0 (ends a sentence) to 1 (ends on a dangling word).

    0.0: ends with . ! or ? (possibly inside closing quotes or brackets) and its quotes are balanced;
    0.5: ends a sentence but leaves a quote open; 0.75: no sentence end; 1.0: empty, or ends on an opening
    quote, a hyphen, a comma or a function word ("of", "the", "could", ...).
    """
    text = claim.rstrip()
    if not text:
        return 1.0
    core = text.rstrip(_CLOSERS)
    open_quote = text.count('"') % 2 == 1 or text.count("`") % 2 == 1
    if core and core[-1] in _TERMINAL and not core.endswith("..."):
        return 0.5 if open_quote else 0.0
    if text[-1] in "-,:;(" or (text[-1] in "'\"`" and (len(text) == 1 or text[-2] == " ")):
        return 1.0
    words = _WORD.findall(text)
    if not words or (words[-1].lower() in _DANGLING and text[-1].isalpha()):
        return 1.0
    return 0.75
