"""Which tree-sitter grammar reads a file, and the node kinds that mean comment, string or definition.

Grammars come compiled inside `tree-sitter-language-pack` 0.13 (later releases fetch them over the network
on first use, which a grading service must never do). Node kinds are matched by name across grammars rather
than per language, so a language the tables do not list still parses into sensible units: every grammar
names its comments "...comment", and functions and classes use a handful of common names.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from tree_sitter import Language, Parser, Query

LanguageFamily = Literal["code", "config", "doc"]


@dataclass(frozen=True)
class LanguageProfile:
    """How a file is read.

    Attributes:
        name: The grammar name of tree-sitter-language-pack ("python", "cpp", ...), "notebook" for Jupyter
            notebooks, or "text" when no grammar applies (line windows, heuristic comments).
        family: "code" (string literals that are statements or prose are not executable), "config" (every
            value is data: only comments are not), or "doc" (prose; only code blocks are executable).
    """

    name: str
    family: LanguageFamily

    @property
    def parsed(self) -> bool:
        """True when a tree-sitter grammar reads the file."""
        return self.name not in {"text", "notebook"}


_BY_EXTENSION: dict[str, tuple[str, LanguageFamily]] = {
    ".py": ("python", "code"), ".pyi": ("python", "code"), ".pyx": ("python", "code"),
    ".sh": ("bash", "code"), ".bash": ("bash", "code"), ".zsh": ("bash", "code"), ".slurm": ("bash", "code"),
    ".sbatch": ("bash", "code"), ".pbs": ("bash", "code"),
    ".c": ("c", "code"), ".h": ("cpp", "code"), ".cc": ("cpp", "code"), ".cpp": ("cpp", "code"),
    ".cxx": ("cpp", "code"), ".hpp": ("cpp", "code"), ".hh": ("cpp", "code"), ".hxx": ("cpp", "code"),
    ".cu": ("cuda", "code"), ".cuh": ("cuda", "code"),
    ".js": ("javascript", "code"), ".mjs": ("javascript", "code"), ".jsx": ("javascript", "code"),
    ".ts": ("typescript", "code"), ".tsx": ("tsx", "code"), ".java": ("java", "code"), ".go": ("go", "code"),
    ".rs": ("rust", "code"), ".jl": ("julia", "code"), ".r": ("r", "code"), ".lua": ("lua", "code"),
    ".scala": ("scala", "code"), ".kt": ("kotlin", "code"), ".rb": ("ruby", "code"), ".swift": ("swift", "code"),
    ".m": ("matlab", "code"), ".pl": ("perl", "code"), ".php": ("php", "code"), ".sql": ("sql", "code"),
    ".f90": ("fortran", "code"), ".cmake": ("cmake", "code"), ".mk": ("make", "code"), ".hs": ("haskell", "code"),
    ".yaml": ("yaml", "config"), ".yml": ("yaml", "config"), ".json": ("json", "config"),
    ".jsonl": ("text", "config"), ".toml": ("toml", "config"), ".ini": ("ini", "config"),
    ".cfg": ("ini", "config"), ".xml": ("xml", "config"), ".gin": ("python", "config"),
    ".md": ("markdown", "doc"), ".markdown": ("markdown", "doc"), ".rst": ("rst", "doc"), ".tex": ("latex", "doc"),
    ".org": ("org", "doc"), ".txt": ("text", "doc"),
}
_BY_NAME: dict[str, tuple[str, LanguageFamily]] = {
    "makefile": ("make", "code"), "gnumakefile": ("make", "code"), "cmakelists.txt": ("cmake", "code"),
    "dockerfile": ("dockerfile", "code"), "requirements.txt": ("requirements", "config"),
}
_SHEBANG: list[tuple[str, str]] = [("python", "python"), ("bash", "bash"), ("/sh", "bash"), ("zsh", "bash"),
                                   ("env sh", "bash"), ("julia", "julia"), ("rscript", "r"), ("node", "javascript")]

NOTEBOOK = LanguageProfile("notebook", "code")
PLAIN_TEXT = LanguageProfile("text", "code")


def profile_for(path: str, first_line: str = "") -> LanguageProfile:
    """The profile of a file, from its name, else its shebang line; plain text when neither is known.

    Args:
        path: The file's path in the repository.
        first_line: Its first line, for scripts without an extension ("#!/usr/bin/env bash").
    """
    name = PurePosixPath(path).name.lower()
    suffix = PurePosixPath(name).suffix
    if suffix == ".ipynb":
        return NOTEBOOK
    if name in _BY_NAME:
        return LanguageProfile(*_BY_NAME[name])
    if name.startswith("dockerfile"):
        return LanguageProfile("dockerfile", "code")
    if suffix in _BY_EXTENSION:
        language, family = _BY_EXTENSION[suffix]
        return LanguageProfile(language, family) if language == "text" or grammar_exists(language) else \
            LanguageProfile("text", family)
    if first_line.startswith("#!"):
        shebang = first_line.lower()
        for marker, language in _SHEBANG:
            if marker in shebang:
                return LanguageProfile(language, "code")
    return PLAIN_TEXT


@functools.cache
def grammar_exists(language: str) -> bool:
    """True when the language pack has a grammar of that name."""
    try:
        grammar(language)
    except (LookupError, ValueError, ImportError, OSError):
        return False
    return True


@functools.cache
def _check_bundled_grammars() -> None:
    """Refuse a tree-sitter-language-pack that fetches grammars over the network (releases from 1.0 on)."""
    from importlib.metadata import PackageNotFoundError, version

    from judge.errors import JudgeConfigError

    try:
        installed = version("tree-sitter-language-pack")
    except PackageNotFoundError as exc:
        raise JudgeConfigError("tree-sitter-language-pack is not installed", field="code_units") from exc
    if int(installed.split(".")[0]) >= 1:
        raise JudgeConfigError(f"tree-sitter-language-pack {installed} downloads grammars at run time; "
                               "install 0.13.0, which ships them", field="code_units")


@functools.cache
def grammar(language: str) -> Language:
    """The compiled tree-sitter grammar of a language (from tree-sitter-language-pack)."""
    _check_bundled_grammars()
    from tree_sitter_language_pack import get_language

    return get_language(language)  # type: ignore[arg-type]


_parsers = threading.local()


def parser_for(language: str) -> Parser:
    """A parser for the language, one per thread (tree-sitter parsers are not thread-safe)."""
    cache: dict[str, Parser] | None = getattr(_parsers, "cache", None)
    if cache is None:
        cache = _parsers.cache = {}
    if language not in cache:
        cache[language] = Parser(grammar(language))
    return cache[language]


# Kinds of string literal across grammars; the outermost captured node counts.
_STRING_KINDS = ("string", "string_literal", "raw_string_literal", "raw_string", "concatenated_string",
                 "template_string", "interpreted_string_literal", "heredoc_body", "text_block",
                 "string_expression", "quoted_string", "multiline_string_literal", "line_string_literal")
_FENCE_KINDS = ("fenced_code_block", "indented_code_block", "literal_block", "code_block", "doctest_block")
_HEADING_KINDS = ("atx_heading", "setext_heading", "section_title", "title", "headline", "section_header")


def _named_kinds(language: Language) -> set[str]:
    return {language.node_kind_for_id(i) or "" for i in range(language.node_kind_count)
            if language.node_kind_is_named(i) and language.node_kind_is_visible(i)}


def _query_of(language: Language, kinds: list[str]) -> Query | None:
    usable: list[str] = []
    for kind in kinds:
        try:
            Query(language, f"({kind}) @x")
        except Exception:
            continue
        usable.append(kind)
    if not usable:
        return None
    return Query(language, "[" + " ".join(f"({kind})" for kind in usable) + "] @x")


@functools.cache
def span_query(language: str, family: LanguageFamily) -> Query | None:
    """A query capturing what is not executable code: comments, plus string literals in code.

    In config files only comments are captured (values are data); in docs the code blocks are captured.
    """
    lang = grammar(language)
    kinds = sorted(_named_kinds(lang))
    if family == "doc":
        return _query_of(lang, [k for k in kinds if k in _FENCE_KINDS])
    wanted = [k for k in kinds if "comment" in k]
    if family == "code":
        wanted += [k for k in kinds if k in _STRING_KINDS]
    return _query_of(lang, wanted)


@functools.cache
def heading_query(language: str) -> Query | None:
    """A query capturing section headings of a doc grammar (Markdown, reStructuredText, Org)."""
    lang = grammar(language)
    return _query_of(lang, [k for k in sorted(_named_kinds(lang)) if k in _HEADING_KINDS])


FUNCTION_KINDS = frozenset({
    "function_definition", "function_declaration", "generator_function_declaration", "method_definition",
    "method_declaration", "constructor_declaration", "function_item", "method", "singleton_method",
    "macro_definition", "function_def", "local_function", "function_statement",
})
CLASS_KINDS = frozenset({
    "class_definition", "class_declaration", "class_specifier", "struct_specifier", "union_specifier",
    "interface_declaration", "enum_declaration", "record_declaration", "impl_item", "trait_item", "struct_item",
    "enum_item", "class", "module", "struct_definition", "object_declaration", "object_definition",
    "trait_definition", "module_definition",
})
# Nodes whose children are the real top-level items: namespaces, header guards, extern "C" blocks.
CONTAINER_KINDS = frozenset({
    "namespace_definition", "linkage_specification", "preproc_ifdef", "preproc_if", "preproc_else",
    "preproc_elif", "preproc_elifdef", "declaration_list", "document", "block_node", "block_mapping", "object",
    "stream", "block_sequence",
})
# Parents of a string that stands as a statement of its own: a docstring.
STATEMENT_PARENTS = frozenset({"expression_statement", "module", "block", "program", "source_file", "chunk"})
