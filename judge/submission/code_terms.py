"""Terms shared by requirement text and code: identifier splitting, number canonicalisation, stemming.

A requirement says "load the pre-trained model from a checkpoint"; code says `load_from_checkpoint(ckpt)`.
Both sides go through the same steps so they meet: identifiers split at underscores, camelCase and digit
boundaries (`ResNet50` -> res, net, 50); numbers canonicalised (`1e-3` and `0.001` are one term); English
stopwords dropped; words stemmed with Snowball (PyStemmer), so "loading" and "load" are one term. Compound
identifiers also yield their joined form (`ResNet` -> resnet), so "ResNet-50" in prose meets `resnet50` in code.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

import Stemmer

# Words (identifiers, with digits) and numbers (decimals, exponents); a number is tried first at a digit.
_TOKEN = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|[A-Za-z_][A-Za-z0-9_]*")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HYPHENATED = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+\b")
# Parts of one identifier: an acronym before a capitalised word (HTTPServer -> HTTP, Server), capitalised or
# lower-case words, acronyms, digit runs.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# Texts up to this long have their terms kept (`MEMO_TEXTS` of them): a grade reads a unit's text in
# retrieval, in its evidence terms and in its checks, and the units of one file recur across grades.
MEMO_MAX_CHARS = 8_000
MEMO_TEXTS = 4096

# Function words of English that carry no topic; kept small on purpose (a code word like "step" or "import"
# is a topic word here).
STOPWORDS: frozenset[str] = frozenset({
    "a", "about", "above", "after", "again", "against", "all", "also", "an", "and", "any", "are", "as", "at",
    "be", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do",
    "does", "doing", "down", "during", "each", "either", "etc", "every", "few", "for", "from", "further", "had",
    "has", "have", "having", "he", "her", "here", "hers", "his", "how", "i", "if", "in", "into", "is", "it",
    "its", "itself", "just", "least", "less", "may", "me", "might", "more", "most", "must", "my", "no", "nor",
    "not", "of", "off", "on", "once", "only", "or", "other", "otherwise", "our", "out", "over", "own", "per",
    "same", "shall", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "though", "through", "thus", "to", "too", "under", "until", "up",
    "upon", "us", "very", "via", "was", "we", "were", "what", "when", "where", "whether", "which", "while",
    "who", "whom", "whose", "why", "will", "with", "within", "without", "would", "yet", "you", "your", "e", "g",
    "ie", "eg", "i.e", "e.g",
})

_stemmer = Stemmer.Stemmer("english")


@functools.lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Snowball (English) stem of a lower-case word; digits and short words are returned unchanged."""
    if len(word) <= 3 or not word.isalpha():
        return word
    result: str = _stemmer.stemWord(word)
    return result


def split_identifier(name: str) -> list[str]:
    """Lower-case parts of an identifier.

    Args:
        name: An identifier or any word, e.g. "load_from_checkpoint", "camelCaseName", "HTTPServer2".

    Returns:
        Its parts in order: ["load", "from", "checkpoint"], ["camel", "case", "name"], ["http", "server", "2"].
    """
    return [part.lower() for part in _PART.findall(name)]


def canonical_number(text: str) -> str:
    """One spelling per number: integers without leading zeros, other numbers as Python writes the float."""
    if text.isdigit():
        return text.lstrip("0") or "0"
    try:
        value = float(text)
    except ValueError:
        return text
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def identifiers_in(text: str) -> list[str]:
    """Identifier-shaped words of a text, in order of first appearance, without duplicates."""
    return list(dict.fromkeys(_IDENTIFIER.findall(text)))


def _word_terms_of(word: str, compounds: bool) -> Iterator[str]:
    parts = split_identifier(word)
    kept = [p for p in parts if p not in STOPWORDS and (len(p) > 1 or p.isdigit())]
    for part in kept:
        yield canonical_number(part) if part.isdigit() else stem(part)
    if compounds and len(parts) > 1:
        letters = "".join(p for p in parts if p.isalpha())
        if len(letters) > 2 and letters not in STOPWORDS:
            yield letters
        if any(p.isdigit() for p in parts) and letters:
            yield "".join(parts)


@functools.lru_cache(maxsize=200_000)
def _word_terms(word: str, compounds: bool) -> tuple[str, ...]:
    """The terms of one identifier-shaped word, worked out once per word: code repeats its identifiers, and
    a grade reads the same units several times (retrieval, evidence terms, checks); ~60% of `terms`' time
    went to splitting and stemming words seen before."""
    return tuple(_word_terms_of(word, compounds))


def terms(text: str, *, compounds: bool = True) -> list[str]:
    """Search terms of a text or code, in order, with repeats (term frequency counts).

    Args:
        text: Prose or code.
        compounds: Also yield the joined form of multi-part identifiers ("resnet" for ResNet, "resnet50" for
            resnet50). Off for comparing requirements with each other, where only the parts matter.

    Returns:
        Stemmed, lower-case parts of every word (stopwords and one-letter parts dropped) and canonical numbers.
    """
    if len(text) <= MEMO_MAX_CHARS:
        return list(_memo_terms(text, compounds))
    return _terms(text, compounds)


@functools.lru_cache(maxsize=MEMO_TEXTS)
def _memo_terms(text: str, compounds: bool) -> tuple[str, ...]:
    return tuple(_terms(text, compounds))


def _terms(text: str, compounds: bool) -> list[str]:
    result: list[str] = []
    for token in _TOKEN.findall(text):
        if token[0].isdigit() or token[0] == ".":
            result.append(canonical_number(token))
        else:
            result.extend(_word_terms(token, compounds))
    if compounds:
        # "pre-trained" in prose is `pretrained` in code, "Hopper-v4" is `HopperV4`.
        result.extend(stem(match.replace("-", "").lower()) for match in _HYPHENATED.findall(text))
    return result


def term_set(text: str, *, compounds: bool = True) -> frozenset[str]:
    """The distinct `terms` of a text."""
    return frozenset(terms(text, compounds=compounds))


def path_terms(path: str) -> list[str]:
    """Terms of a file path: its folder and file names split like identifiers, the extension kept whole."""
    stem_part, dot, extension = path.rpartition(".")
    base = stem_part if dot and "/" not in extension else path
    result = terms(base.replace("/", " ").replace("-", " ").replace(".", " "))
    if dot and "/" not in extension and extension:
        result.append(extension.lower())
    return result
