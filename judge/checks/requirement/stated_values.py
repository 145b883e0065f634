"""Values a requirement states, and whether the code that is its evidence holds them.

A requirement such as "use a hidden size (4096) and train for 100 epochs with a learning rate of 1e-4" states
values that are part of what it asks: code that trains for 50 epochs does not implement it, wherever it sits
and whatever it is called. `stated_values` reads the values a requirement's text states (numbers with the
words that name them; identifiers that carry a number, such as `ResNet-50` or `CIFAR-10`), and
`check_values` looks for each in the lines the leaf's evidence reads: its code units, plus what such code
reads at run time (config files, a script's command line, the defaults of the arguments it parses).

A value is *held* when a line binding its name (an identifier, key or flag whose words match the value's
name words, `seq_len` for "sequence length", `lr` for "learning rate") holds an equal number in any notation
(`1e-4` / `0.0001`, `4_096`, `10%` / `0.1`), or, when no line binds its name, when the number occurs in the
evidence at all. It *differs* when lines bind its name and none of them holds it (the first such line's
number is what was found). It is *unseen* when neither. Equal is equal as a number: notation never decides.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from judge.checks.requirement.payload import StatedValueCheck
from judge.models import ReferenceSpan
from judge.submission.code_units import CodeUnit

if TYPE_CHECKING:
    from judge.submission.view import SubmissionView

# A number as prose and code write it: 4096, 4_096, 4,096, 0.5, .5, 1e-4, 3.0E+2, 10% (sign handled apart).
NUMBER_LITERAL = re.compile(
    r"(?<![\w.])(?<![A-Za-z]-)(\d{1,3}(?:,\d{3})+(?![\d,])|\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)(\s*%)?"
    r"(?![\w.]*[A-Za-z_])")
# An identifier that carries a number: ResNet-50, CIFAR-10, gpt-4, Llama-2-7b, ViT-B/16, T5-base, bert_12l.
_IDENTIFIER = re.compile(r"(?<![\w-])([A-Za-z][A-Za-z]+)[-_]?(\d+(?:\.\d+)?)(?:[-/][A-Za-z0-9]+)*(?![\w-])")
_WORD = re.compile(r"[A-Za-z]+")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_STOP = frozenset((
    "a", "an", "the", "of", "to", "for", "with", "and", "or", "in", "on", "at", "by", "as", "is", "are", "be",
    "set", "sets", "use", "uses", "using", "used", "from", "into", "than", "then", "each", "per", "every", "all",
    "but", "only", "its", "it", "this", "that", "these", "those", "which", "where", "when", "while", "we", "our",
    "their", "there", "value", "values", "number", "numbers", "equal", "equals", "about", "around", "approximately",
    "least", "most", "up", "down", "over", "under", "step", "steps", "first", "second", "third", "final", "after",
    "before",
))
# Words that say a number is a position in a text, not a value the code holds.
_NOT_VALUES = frozenset((
    "step", "line", "lines", "figure", "table", "section", "equation", "eq", "appendix", "algorithm", "page",
))
_NUMBER_LIST = re.compile(r"(?<![\w.])\d[\d_.]*(?:\s*,\s*(?:and\s+|or\s+)?\d[\d_.]*)+(?:,?\s+(?:and|or)\s+\d[\d_.]*)?"
                          r"|(?<![\w.])\d[\d_.]*\s+(?:and|or)\s+\d[\d_.]*")
_MULTIPLIERS = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
Status = Literal["held", "differs", "unseen"]


@dataclass(frozen=True)
class StatedValue:
    """A value a requirement states: `text` as written, `values` the numbers it may mean (a percentage is
    both 10 and 0.1), `names` the words before it that name it ("learning rate"), `unit` the word right
    after it that counts it ("100 epochs"), `stem` the name of an identifier such as CIFAR-10, `identifier` the
    exact name a reference span binds it to (`max_frames`, `--lr` as `lr`), `listed` whether it is a list
    ("(0.1, 0.3, 0.5)"): every member must be there."""

    text: str
    values: tuple[float, ...]
    names: tuple[str, ...]
    stem: str = ""
    unit: str = ""
    identifier: str = ""
    listed: bool = False


@dataclass(frozen=True)
class ValueFinding:
    """One stated value against the evidence: its status, and where a differing value was found."""

    stated: StatedValue
    status: Status
    found: str = ""
    location: str = ""


def parse_number(text: str) -> float | None:
    """The number a literal means (`4_096`, `4,096`, `1e-4`), None when it is none."""
    cleaned = text.replace("_", "").replace(",", "").strip()
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def same_number(a: float, b: float) -> bool:
    """Equal as numbers, up to float notation (1e-4 == 0.0001; 0.1 + 0.2 ~ 0.3)."""
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


def name_words(identifier: str) -> list[str]:
    """The lower-case words of an identifier, key or flag (`seqLen`, `--seq_len`, `hidden-size`)."""
    return [w.lower() for part in re.split(r"[^A-Za-z0-9]+", identifier) for w in _CAMEL.findall(part)
            if not w.isdigit()]


def _content_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def stated_values(requirement: str) -> list[StatedValue]:
    """The values a requirement's text states (file references and "Step N" prefixes removed first).

    Args:
        requirement: The requirement as the rubric holds it.
    """
    from judge.submission.view import requirement_text  # the submission layer imports this package

    text = requirement_text(requirement)
    out: list[StatedValue] = []
    taken: list[tuple[int, int]] = []
    for match in _IDENTIFIER.finditer(text):
        stem, number = match.group(1).lower(), parse_number(match.group(2))
        if number is None or stem in _NOT_VALUES or len(stem) < 2:
            continue
        out.append(StatedValue(match.group(0), (number,), (stem,), stem=stem))
        taken.append(match.span())
    # A list of numbers ("values (0.1, 0.3, 0.5)", "horizons of 96, 192 and 336") is one statement: any of them.
    lists = {run.start(): run for run in _NUMBER_LIST.finditer(text)}
    for match in NUMBER_LITERAL.finditer(text):
        if any(start <= match.start() < end for start, end in taken):
            continue
        number = parse_number(match.group(1))
        if number is None:
            continue
        members: tuple[float, ...] = ()
        run = lists.get(match.start())
        if run is not None:
            members = tuple(n for n in (parse_number(m.group(1)) for m in NUMBER_LITERAL.finditer(run.group(0)))
                            if n is not None)
            taken.append(run.span())
            match_end = run.end()
        else:
            match_end = match.end()
        # A value's name lies in its own clause, after any value before it.
        before = NUMBER_LITERAL.sub(" | ", text[max(0, match.start() - 60) : match.start()])
        clause = re.split(r"[.;:!?|\n]|,\s", before)[-1]
        words_before = [w for w in _content_words(clause) if w not in _STOP]
        if (words_before and words_before[-1] in _NOT_VALUES) or (1900 <= number <= 2100 and number.is_integer()):
            continue
        following = _content_words(re.split(r"[.;:!?,()\n]", text[match_end : match_end + 40])[0])[:2]
        if following and following[0] in _MULTIPLIERS:  # "1 million frames" is 1e6 frames
            number *= _MULTIPLIERS[following.pop(0)]
        unit = following[0] if following and following[0] not in _STOP else ""
        names = tuple(words_before[-2:])
        if not names and not unit:
            continue
        percent = bool(match.group(2))
        values = members or ((number, number / 100.0) if percent else (number,))
        written = run.group(0).strip() if run is not None else match.group(0).strip()
        out.append(StatedValue(written, values, names, unit=unit, listed=len(members) > 1))
    return out


_COUNTERS = frozenset({"num", "n", "count", "number", "total", "nb"})


def _binds(value: StatedValue, words: Sequence[str], identifier: str) -> bool:
    """Whether a code name (its lower-case `words` in order, and as one `identifier`) names the value: the exact
    name a reference binds it to; else the word that counts it (`epochs`) as the name's head word (`num_epochs`,
    `epochs`, not `frame_skip` for frames); else its name words (all of two; a word matches its abbreviation or
    extension: `seq`/`sequence`, `len`/`length`), or their initials (`lr` for "learning rate")."""
    def matches(word: str, among: Sequence[str]) -> bool:
        return any(t == word or (len(t) >= 3 and word.startswith(t)) or (len(word) >= 3 and t.startswith(word))
                   for t in among)
    if value.identifier:
        return value.identifier == identifier
    if not words:
        return False
    if value.unit:
        head = [words[-1]] + ([words[0]] if words[-1] in _COUNTERS else [])
        return matches(value.unit, head)
    names = value.names
    hits = sum(matches(w, words) for w in names)
    if hits >= max(1, len(names) - (len(names) > 2)):
        return True
    initials = "".join(w[0] for w in names) if len(names) == 2 else ""
    return bool(initials) and initials in words


def _numbers(line: str) -> list[tuple[str, float]]:
    out = []
    for match in NUMBER_LITERAL.finditer(line):
        number = parse_number(match.group(1))
        if number is not None:
            out.append((match.group(0).strip(), number))
    return out


def check_values(stated: Sequence[StatedValue], lines: Sequence[tuple[str, str]],
                 evidence_lines: int | None = None) -> list[ValueFinding]:
    """Each stated value against the lines the evidence reads (the leaf's own evidence first).

    Args:
        stated: The requirement's stated values.
        lines: (location, text) of every line the evidence reads: the leaf's own evidence first.
        evidence_lines: How many of `lines` are the leaf's own evidence (None: all of them).
    """
    read = [(where, text) for where, text in lines if text.strip()]
    own = lines if evidence_lines is None else lines[:evidence_lines]
    evidence = sum(1 for _, text in own if text.strip())
    return [_identifier_finding(value, read) if value.stem else _number_finding(value, read, evidence)
            for value in stated]


_ADJACENT = re.compile(r"([A-Za-z_][\w.-]*)[\s=:,\[\]()'\"+*/-]{0,6}?(?<![\w.])"
                       r"(\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+)(?![\w.]*[A-Za-z_])")
_FLAG = re.compile(r"""["'](--?[A-Za-z][\w-]*)["']""")
_DEFAULT = re.compile(r"default\s*=\s*[-+]?(\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+)")
_GENERIC = frozenset({"default", "type", "help", "nargs", "const", "dest", "choices", "value", "metavar"})


# Every leaf with a stated number reads the same lines of the submission: each line's pairs are worked out
# once (a 2,000-leaf grade spent 7 of its 16 s re-reading them).
@functools.lru_cache(maxsize=16_384)
def _pairs(text: str) -> tuple[tuple[str, float], ...]:
    """(name, number) pairs a line binds: a number right after a name (`hidden_size = 4096`, `lr=1e-4`,
    `--epochs 100`, `layers[:-12]`), and an argument's flag with its default (`add_argument("--lr", default=.1)`)."""
    out = []
    flag = _FLAG.search(text) if "add_argument" in text else None
    default = _DEFAULT.search(text) if flag else None
    if flag and default:
        number = parse_number(default.group(1))
        if number is not None:
            out.append((flag.group(1), number))
    for match in _ADJACENT.finditer(text):
        name = match.group(1).rsplit(".", 1)[-1]
        number = parse_number(match.group(2))
        if number is not None and name.lower() not in _GENERIC:
            out.append((name, number))
    return tuple(out)


def _names(value: StatedValue, name: str) -> bool:
    """Whether a code name is the stated value's name."""
    identifier = name.lower().replace("-", "_").strip("_")
    return _binds(value, name_words(name), identifier)


def _number_finding(value: StatedValue, read: list[tuple[str, str]],
                    evidence_lines: int) -> ValueFinding:
    """Held when a name of the value is bound to an equal number anywhere it reads, or (no such binding) the
    number is in the leaf's own evidence (its first `evidence_lines` lines); differs when, in the leaf's own
    evidence, its names are bound only to other numbers (0 and 1, flags and indices, count only for a stated
    0 or 1); else unseen (another value bound in a config or script elsewhere is reported, not held against it:
    a repository holds the configs of several experiments)."""
    wanted = [abs(v) for v in value.values]
    # A whole 0 or 1 ("reward == 1", "k = [0]") is a switch or an index; "norm 1.0" is a setting.
    trivial = all(w in (0.0, 1.0) for w in wanted) and "." not in value.text

    def equal(number: float) -> bool:
        return any(same_number(abs(number), w) for w in wanted)
    own: tuple[str, str] | None = None
    elsewhere: tuple[str, str] | None = None
    for position, (where, text) in enumerate(read):
        for name, number in _pairs(text):
            if not _names(value, name) or (not trivial and abs(number) in (0.0, 1.0)):
                continue
            if equal(number) and not value.listed:
                return ValueFinding(value, "held")
            if equal(number):
                continue
            if position < evidence_lines:
                own = own or (where, text.strip()[:80])
            else:
                elsewhere = elsewhere or (where, text.strip()[:80])
    if value.listed:
        # A list is held when every member is there: bound to its name anywhere, or in the leaf's own evidence.
        present = {abs(n) for _, text in read[:evidence_lines] for _, n in _numbers(text)}
        present |= {abs(n) for _, text in read for name, n in _pairs(text) if _names(value, name)}
        if all(any(same_number(w, p) for p in present) for w in wanted):
            return ValueFinding(value, "held")
    elif not trivial and any(equal(n) for _, text in read[:evidence_lines] for _, n in _numbers(text)):
        # (A 0 or a 1 is in almost any code: only bound to the value's name does it hold.)
        return ValueFinding(value, "held")
    if own is not None and not trivial:  # a stated 0 or 1 (a switch, an index) is too common to contradict
        return ValueFinding(value, "differs", found=own[1], location=own[0])
    if elsewhere is not None:
        return ValueFinding(value, "unseen", found=elsewhere[1], location=elsewhere[0])
    return ValueFinding(value, "unseen")


def _identifier_finding(value: StatedValue, read: list[tuple[str, str]]) -> ValueFinding:
    """An identifier such as CIFAR-10: held when its stem is written with its number (any separator),
    differs when the stem is written only with other numbers (CIFAR-100)."""
    stem = re.escape(value.stem)
    pattern = re.compile(rf"(?i)(?<![A-Za-z]){stem}[-_ ]?(\d+(?:\.\d+)?)")
    others: list[tuple[str, str]] = []
    for where, text in read:
        for match in pattern.finditer(text):
            number = parse_number(match.group(1))
            if number is not None and same_number(number, value.values[0]):
                return ValueFinding(value, "held")
            others.append((where, match.group(0)))
    if others:
        return ValueFinding(value, "differs", found=others[0][1], location=others[0][0])
    return ValueFinding(value, "unseen")


_CONFIG_LANGUAGES = frozenset({"yaml", "json", "toml", "ini", "bash", "shell", "sh", "make", "dockerfile"})
_READS_MEMO = "requirement_value_reads"
_FLAG_WITH_VALUE = re.compile(r"--[A-Za-z][\w-]*[ =]+[-+]?[\d.]")


def read_lines(view: SubmissionView) -> list[tuple[str, str]]:
    """(file:line, text) of what code reads at run time: config files, shell scripts and command lines
    (`--epochs 100`), and the defaults of the arguments it parses (`add_argument(..., default=...)`);
    computed once per submission."""
    cached: list[tuple[str, str]] | None = view.memo.get(_READS_MEMO)
    if cached is None:
        cached = []
        for unit in view.code_units:
            config = unit.kind == "config" or unit.language in _CONFIG_LANGUAGES
            for number, text in zip(unit.line_numbers, unit.executable_lines, strict=True):
                if config or "add_argument(" in text or _FLAG_WITH_VALUE.search(text):
                    cached.append((f"{unit.file_path}:{number}", text))
        view.memo[_READS_MEMO] = cached
    return cached


def value_checks(requirement: str, units: Sequence[CodeUnit], reads: Sequence[tuple[str, str]],
                 spans: Sequence[ReferenceSpan] = ()) -> list[StatedValueCheck]:
    """The requirement's stated values checked against the leaf's evidence units and what code reads.

    Args:
        requirement: The requirement's text.
        units: The leaf's evidence (its best acting units).
        reads: `read_lines` of the submission.
        spans: The leaf's reference spans, when the task has a reference: the values they bind to a name
            (`name = 4096`, `name=1e-4`, `name: 96`, `"--name", 96`) are stated values too.
    """
    stated = stated_values(requirement)
    if spans:
        # With a reference, a value its spans never write (in any notation) is not one the code can be held to:
        # the requirement's text may round it, count it or name it otherwise ("23-dimensional").
        written = {abs(n) for span in spans for _, n in _numbers(span.text)}
        stated = [v for v in stated if v.stem or any(same_number(abs(x), w) for x in v.values for w in written)]
    stated += [v for v in reference_values(spans, requirement)
               if not any(same_number(v.values[0], s.values[0]) for s in stated)]
    if not stated or not units:
        return []
    lines = [(f"{u.file_path}:{number}", text) for u in units
             for number, text in zip(u.line_numbers, u.executable_lines, strict=True)]
    found = check_values(stated, [*lines, *reads], evidence_lines=len(lines))
    return [StatedValueCheck(stated=f.stated.text, name=" ".join([*f.stated.names, f.stated.unit]).strip(),
                             status=f.status, found=f.found, location=f.location, identifier=bool(f.stated.stem))
            for f in found]


_NUM = r"([-+]?(?:\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+))(?![\w.])"
_BOUND_LITERAL = re.compile(r"""(?<![\w.])["']?([A-Za-z_][\w.]*)["']?\s*[:=]\s*""" + _NUM + "|"
                            r"""["'](--[A-Za-z][\w-]*)["']\s*,\s*["']?""" + _NUM)


_NARROW_CITATION = 40


def reference_values(spans: Sequence[ReferenceSpan], requirement: str = "") -> list[StatedValue]:
    """The values the cited lines of a reference span bind to a name (`hidden_size = 4096`, `lr=1e-4`,
    `"--epochs", 100`), each bound to that exact name; numbers of magnitude 1 or less left out (flags, signs
    and indices, not settings). Only lines a narrow citation of `requirement` covers count (fewer than
    `_NARROW_CITATION` lines); with no `requirement`, every line of the spans."""
    from judge.reference.sources import parse_citations  # the reference package imports the checks' helpers

    # A citation of a whole file or a long stretch of it points at where the code is, not at values it states.
    citations = [c for c in (parse_citations(requirement) if requirement else [])
                 if c.end_line - c.start_line < _NARROW_CITATION]
    if requirement and not citations:
        return []
    out: dict[tuple[str, float], StatedValue] = {}
    for span in spans:
        for offset, line in enumerate(span.text.split("\n")):
            number_in_file = span.start_line + offset
            if citations and not any(c.start_line <= number_in_file <= c.end_line
                                     and span.file.endswith(c.path.rsplit("/", 1)[-1]) for c in citations):
                continue
            code = line.split("#", 1)[0]
            for match in _BOUND_LITERAL.finditer(code):
                name, literal = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
                number = parse_number(literal)
                identifier = name.rsplit(".", 1)[-1].lower().replace("-", "_").strip("_")
                names = tuple(w for w in name_words(identifier) if w != "self")
                if number is None or abs(number) <= 1.0 or not names or len(identifier) < 3:
                    continue
                out.setdefault((identifier, number), StatedValue(literal, (number,), names[-2:], identifier=identifier))
    return list(out.values())
