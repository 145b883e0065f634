"""Whether a unit of the submission acts: the gate every implementation must pass before it is compared.

A unit implements nothing when it only restates: comments and docstrings, a stub body (`pass`, `...`,
`return None`, `raise NotImplementedError`), prints and logs, a constant no code reads, a sentence set as an
item of data, a config section whose keys no code of the submission reads, imports alone, a document's code block
that would do nothing as code (a fenced Python block is read as Python). `SubmissionActs` reads a
submission's units once (per submission, memoised on the view): the imports of each file, the names its code
reads outside prints and logs, and per unit its behaviour (`judge.reference.behaviour`) and whether it acts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from judge.reference.behaviour import Behaviour, Scope, behaviour_of, imports_in
from judge.reference.code_acts import IMPORT_LINE, imports_only
from judge.reference.code_scope import bound_names
from judge.submission.code_units import CodeUnit, executable_text
from judge.submission.view import SubmissionView

_MEMO = "requirement_acts"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRING_WORD = re.compile(r"[\"']([A-Za-z_][\w.-]{0,60})[\"']")
_REPORT_LINE = re.compile(r"^\s*(?:[\w.]+\s*=\s*logging\.|(?:print|pprint|echo|printf|console\.\w+|warnings\.warn|"
                          r"sys\.std(?:out|err)\.write|(?:self\.)?_*log(?:ger|ging)?\.\w+|_*LOG(?:GER)?\.\w+)\s*[( ])",
                          re.I)
# An assignment's target (`x = ...`, `self.x: int = ...`): its definition, not a read of it.
_TARGET = re.compile(r"^\s*[A-Za-z_][\w.]*\s*(?::[^=]+)?=(?!=)")
# An item set under a string key (`state["step"] = ...`): writing the key is not reading it.
_ITEM_TARGET = re.compile(r"""^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])*\[\s*["'][\w.-]+["']\s*\]\s*=(?!=)""")
_CONFIG_KEY = re.compile(r"^\s*-?\s*[\"']?([A-Za-z_][\w.-]*)[\"']?\s*[:=]")
_CONFIG_VALUE = re.compile(r"[:=]\s*[\"']?([A-Za-z_][\w.]*)[\"']?\s*,?\s*$")
_FENCE = re.compile(r"^\s*(?:```|~~~)\s*([\w+.-]*)")
_CODE_MARK = re.compile(r"[()\[\]{}=<>|;$/\\]|--|\.\w+\b")
_PYTHON_TAGS = frozenset({"python", "py", "python3", "ipython", "pycon"})


def doc_blocks_act(code: str) -> bool:
    """Whether a document's code (its fenced blocks, as `executable_text` keeps them) does something: a block
    tagged Python is read as Python (a `def` whose body is `...` does nothing), any other block line by line
    (a shell command acts, `echo` does not)."""
    blocks: list[tuple[bool, str, list[str]]] = [(False, "", [])]
    inside = False
    for line in code.split("\n"):
        fence = _FENCE.match(line)
        if fence:
            inside = not inside
            blocks.append((inside, fence.group(1).lower() if inside else "", []))
            continue
        blocks[-1][2].append(line)
    for fenced, tag, lines in blocks:
        # Text outside a fence is an indented block: code only if it reads as code (prose indented, or what is
        # left of a line whose copied words were blanked out, is not).
        lines = lines if fenced else [line for line in lines if _CODE_MARK.search(line)]
        text = "\n".join(lines)
        if not text.strip():
            continue
        language = "python" if tag in _PYTHON_TAGS else "text"
        if behaviour_of(text, language).acts > 0:
            return True
    return False


def _reads(units: Sequence[CodeUnit]) -> Counter[str]:
    """How often each name (identifier, attribute, short string) is read by the submission's code: outside
    config and prose, imports, lines that only print or log, and the target of an assignment."""
    counts: Counter[str] = Counter()
    for unit in units:
        if unit.kind in {"config", "doc"}:
            continue
        for line in unit.executable_lines:
            if not line.strip() or _REPORT_LINE.match(line) or IMPORT_LINE.match(line):
                continue
            counts.update(_NAME.findall(_TARGET.sub("", _ITEM_TARGET.sub("", line, count=1), count=1)))
        for line in unit.lines:  # string keys (`cfg["lr"]`) are emptied in executable text when prose-like
            if not _REPORT_LINE.match(line):
                counts.update(_STRING_WORD.findall(_ITEM_TARGET.sub("", line, count=1)))
    return counts


@dataclass
class SubmissionActs:
    """Per submission: each file's imports, the names its code reads, and each unit's behaviour.

    Attributes:
        units: The submission's code units.
        reads: Name -> occurrences in code (see `_reads`).
        defined: Names the code defines with `def` or `class`.
        imports: Per file, imported alias -> module path.
        inert: Functions the code defines whose bodies do nothing.
        bound: Names the Python code binds (`code_scope.bound_names`): any other name is free.
    """

    units: list[CodeUnit]
    reads: Counter[str]
    defined: frozenset[str]
    imports: dict[str, dict[str, str]] = field(default_factory=dict)
    inert: frozenset[str] = frozenset()
    bound: frozenset[str] = frozenset()
    _behaviours: dict[int, Behaviour] = field(default_factory=dict)
    _acting: dict[int, bool] = field(default_factory=dict)

    @classmethod
    def of(cls, view: SubmissionView) -> SubmissionActs:
        """The view's analysis, computed once."""
        cached = view.memo.get(_MEMO)
        if cached is None:
            cached = view.memo[_MEMO] = cls.build(view.code_units)
        assert isinstance(cached, SubmissionActs)
        return cached

    @classmethod
    def build(cls, units: Sequence[CodeUnit]) -> SubmissionActs:
        """Analyse a list of units (a submission's, or a reference's)."""
        imports: dict[str, dict[str, str]] = {}
        defined: set[str] = set()
        bound: set[str] = set()
        for unit in units:
            if unit.language in {"python", "notebook"}:
                imports.setdefault(unit.file_path, {}).update(imports_in(unit.text))
                bound.update(bound_names(unit.text))
            defined.update(re.findall(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", unit.text, re.M))
        found = cls(list(units), _reads(units), frozenset(defined), imports, bound=frozenset(bound))
        # A function whose body does nothing makes its calls do nothing: a script's `main()` that only prints.
        functions = [n for n, unit in enumerate(found.units) if unit.kind == "function" and unit.name]
        inert = frozenset(found.units[n].name.rsplit(".", 1)[-1] for n in functions if not found.behaviour(n).acts)
        defined_active = {found.units[n].name.rsplit(".", 1)[-1] for n in functions if found.behaviour(n).acts}
        found.inert = inert - defined_active
        # Only a unit that may call one of them reads differently now (its calls of them do nothing).
        for n in [n for n in found._behaviours if any(name in found.units[n].text for name in found.inert)]:
            del found._behaviours[n]
        return found

    def scope(self, unit: CodeUnit) -> Scope:
        """The names a unit's file imports, the names the code reads, the functions that do nothing."""
        return Scope(self.imports.get(unit.file_path, {}), frozenset(self.reads), self.inert, self.bound)

    def behaviour(self, n: int) -> Behaviour:
        """Behaviour of unit `n` (memoised)."""
        found = self._behaviours.get(n)
        if found is None:
            unit = self.units[n]
            language = "python" if unit.language in {"python", "notebook"} else unit.language
            found = self._behaviours[n] = behaviour_of(unit.text, language, self.scope(unit))
        return found

    def acts(self, n: int) -> bool:
        """Whether unit `n` does something (see the module docstring; memoised)."""
        found = self._acting.get(n)
        if found is None:
            found = self._acting[n] = self._acts(n)
        return found

    def _acts(self, n: int) -> bool:
        unit = self.units[n]
        if not executable_text(unit).strip():
            return False
        if unit.kind == "doc":  # a README acts through its code blocks (commands), never through its prose
            return doc_blocks_act(executable_text(unit))
        if unit.kind == "config":
            return self.config_read(unit)
        if self.behaviour(n).acts == 0:
            return False
        return not (unit.language in {"python", "notebook"} and imports_only(executable_text(unit)))

    def config_read(self, unit: CodeUnit) -> bool:
        """A config section acts when code of the submission reads one of its keys, or one of its values
        names a function or class the code defines."""
        for line in unit.executable_lines:
            key = _CONFIG_KEY.match(line)
            if key and any(self.reads.get(part, 0) for part in {key.group(1), key.group(1).split(".")[-1]}):
                return True
            value = _CONFIG_VALUE.search(line)
            if value and value.group(1).split(".")[-1] in self.defined:
                return True
        return False
