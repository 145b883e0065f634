"""Hollow units: code that does nothing, or whose only work is calling code that does nothing.

A unit is *hollow* when its body is a placeholder (`pass`, `...`, a constant returned, a raise, prints and logs
only: `code_acts`), or when, beside plumbing (argument parsing, printing, paths, string handling:
`hollow_python`), its work is only calls into hollow units, or calls fed nothing but what a hollow unit returned.
Hollowness follows calls across the submission's files and languages: a Python `main` that only calls
placeholders, a module whose entry point only calls a hollow `main`, a shell script that only runs a hollow
program, or a program the submission does not hold (and that the task's reference, when it has one, does not
hold either). It is a fixpoint over the call graph: mutually recursive functions that do nothing else are
hollow, and a thin wrapper of a function that does real work is not.

Three statuses, per definition, program and unit: *real* (library calls, arithmetic on data, file writes, or a
call of real own code fed real values), *hollow*, and *plumbing* (it acts, but only by plumbing, and calls
nothing hollow: a unit that only makes a directory is not hollow, it is judged like any other). A call of a
name the submission defines several times reads the best of those definitions (an abstract `pass` method with a
real override is not hollow).

`HollowUnits.of(view, reference_paths)` analyses a submission once per reference (memoised on the view); the
requirement check leaves hollow units out of every leaf's candidates, and a leaf whose only candidates are hollow
fails before any judge, its reason naming them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from judge.checks.requirement.hollow_flow import flow_pins
from judge.checks.requirement.hollow_python import Definition, OwnNames, read_definitions
from judge.checks.requirement.shell_commands import MODULE, commands, resolve_program, shell_command
from judge.reference.code_scope import Scope, imports_in
from judge.submission.code_units import CodeUnit, post_images
from judge.submission.diff import ParsedDiff
from judge.submission.view import SubmissionView

Status = Literal["real", "plumbing", "hollow"]
_RANK: dict[Status, int] = {"hollow": 0, "plumbing": 1, "real": 2}
_MEMO = "hollow_units"
_MAX_ROWS = 20_000  # a longer file is not read (treated as real: nothing is claimed about it)
_DEFINES = re.compile(r"^\s*(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)", re.M)
_MISSING = ", which the submission does not hold"


@dataclass(frozen=True)
class Verdict:
    """A status and, when hollow, why (a clause: "is a placeholder", "only calls placeholders (`f`)")."""

    status: Status
    why: str = ""


@dataclass
class _Def:
    file: str
    index: int
    definition: Definition
    status: Status = "hollow"
    hollow_calls: list[str] = field(default_factory=list)
    void: frozenset[str] = frozenset()
    fed: frozenset[tuple[int, str]] = frozenset()  # (line, callee) of calls fed only hollow results


@dataclass
class HollowUnits:
    """The hollow units of one submission: unit index -> why it is hollow (a sentence naming it and its line)."""

    reasons: dict[int, str] = field(default_factory=dict)
    statuses: dict[int, Status] = field(default_factory=dict)
    calls: dict[int, frozenset[int]] = field(default_factory=dict)  # unit -> the hollow units it calls

    @classmethod
    def of(cls, view: SubmissionView, reference_paths: Iterable[str] = (), *,
           unseen_files: bool = False) -> HollowUnits:
        """The view's analysis for a task whose reference holds `reference_paths` (and, `unseen_files`, whose
        workspace held files neither the submission nor the reference shows), computed once."""
        paths = frozenset(reference_paths)
        key = (_MEMO, paths, unseen_files)
        cached = view.memo.get(key)
        if cached is None:
            cached = view.memo[key] = cls.build(view.code_units, view.diff, paths, unseen_files=unseen_files)
        assert isinstance(cached, HollowUnits)
        return cached

    @classmethod
    def build(cls, units: Sequence[CodeUnit], diff: ParsedDiff, reference_paths: Iterable[str] = (),
              reads: frozenset[str] | None = None, *, unseen_files: bool = False) -> HollowUnits:
        """Analyse `units` of `diff` (see the module docstring).

        Args:
            units: The submission's code units.
            diff: The diff they were cut from (its files are read whole where it shows them whole).
            reference_paths: Files the task's reference holds (a program found there is not missing).
            reads: Names the submission's code reads (a constant nothing reads does nothing), None: unknown.
            unseen_files: The agent's workspace held files no one shows us (a repository around the
                submission): a program neither the submission nor the reference holds may be one of them, so
                running it is unknown (plumbing), not hollow.
        """
        files: dict[str, tuple[str, bool]] = {}
        for image in post_images(diff):
            last = max(image.lines)
            if last > _MAX_ROWS:
                continue
            text = "\n".join(image.lines.get(number, "") for number in range(1, last + 1))
            files[image.path] = (text, len(image.lines) == last)
        graph = _CallGraph(files, frozenset(reference_paths), reads, unseen_files)
        graph.solve()
        found = cls()
        for n, unit in enumerate(units):
            status, reason = graph.unit_status(unit)
            found.statuses[n] = status
            if status == "hollow":
                found.reasons[n] = reason
        by_name: dict[tuple[str, str], list[int]] = {}
        for n, unit in enumerate(units):
            if n in found.reasons and unit.kind == "function" and unit.name:
                by_name.setdefault((unit.file_path, unit.name.rsplit(".", 1)[-1]), []).append(n)
        for n, unit in enumerate(units):
            names = graph.hollow_callees(unit)
            called = {m for name, file in names for m in by_name.get((file, name), [])} - {n}
            if called:
                found.calls[n] = frozenset(called)
        return found

    def hollow(self, n: int) -> bool:
        """Whether unit `n` is hollow."""
        return n in self.reasons

    def nothing_real(self, acting: Iterable[int]) -> bool:
        """Whether none of the `acting` units does real work (each is hollow, or plumbing only) while some
        are hollow: the submission as a whole does nothing a requirement could be."""
        acting = list(acting)
        return any(n in self.reasons for n in acting) and all(
            self.statuses.get(n, "real") != "real" for n in acting)


class _CallGraph:
    """Definitions of every Python file, statuses solved to a fixpoint, programs and shell lines resolved."""

    def __init__(self, files: dict[str, tuple[str, bool]], reference_paths: frozenset[str],
                 reads: frozenset[str] | None, unseen_files: bool = False) -> None:
        self.files = files
        self.reference_paths = reference_paths
        self.unseen_files = unseen_files
        python = {path: text for path, (text, _) in files.items() if path.endswith(".py")}
        functions: set[str] = set()
        classes: set[str] = set()
        for text in python.values():
            for kind, name in _DEFINES.findall(text):
                (classes if kind == "class" else functions).add(name)
        modules = frozenset(path.rsplit("/", 1)[-1].removesuffix(".py") for path in python)
        own = OwnNames(frozenset(functions), frozenset(classes), modules)
        self.defs: list[_Def] = []
        self.by_file: dict[str, list[_Def]] = {}
        for path, text in python.items():
            scope = Scope(imports_in(text), reads)
            found = [_Def(path, i, d) for i, d in enumerate(read_definitions(text, own, scope))]
            self.by_file[path] = found
            self.defs.extend(found)
        self.by_name: dict[str, list[_Def]] = {}
        for entry in self.defs:
            if entry.definition.kind != "module":
                self.by_name.setdefault(entry.definition.name, []).append(entry)
        self._programs: dict[str, Verdict] = {}
        self.pins: dict[int, str] = {}  # id of a definition's entry -> why `hollow_flow` pinned it hollow

    def name_status(self, name: str, file: str = "") -> Status:
        """The best status of the definitions named `name` that a call in `file` reaches: the file's own when
        it defines the name (a module's name shadows another file's), else all of them (real when the
        submission defines none)."""
        entries = self.by_name.get(name)
        if not entries:
            return "real"
        entries = [e for e in entries if e.file == file] or entries
        return max((e.status for e in entries), key=_RANK.__getitem__)

    def solve(self) -> None:
        """Statuses to a fixpoint, then the definitions `hollow_flow` finds that still do nothing pinned hollow
        and the fixpoint solved again, until no more are found."""
        for _ in range(len(self.defs) + 1):
            self._solve_statuses()
            found = {key: why for key, why in flow_pins(self.defs, self.name_status).items() if key not in self.pins}
            if not found:
                return
            self.pins.update(found)
            for entry in self.defs:
                entry.status = "hollow"

    def _solve_statuses(self) -> None:
        """From every definition hollow, raise what its own events make real or plumbing until nothing changes
        (so a cycle of calls that does nothing else stays hollow); pinned definitions stay hollow."""
        for _ in range(len(self.defs) + 2):
            changed = False
            for entry in self.defs:
                status = self._evaluate(entry)
                if status != entry.status:
                    entry.status, changed = status, True
            if not changed:
                break

    def _evaluate(self, entry: _Def) -> Status:
        definition = entry.definition
        if (definition.kind == "function" and definition.placeholder) or id(entry) in self.pins:
            return "hollow"
        void: set[str] = set()
        fed: set[tuple[int, str]] = set()
        real = False
        hollow_calls: list[str] = []
        for event in definition.events:
            if event.kind == "real":
                real = True
            elif event.kind == "call":
                status = self.name_status(event.what, entry.file)
                is_fed = bool(event.names & void) or any(self.name_status(c, entry.file) == "hollow"
                                                         for c in event.callees)
                if is_fed:
                    fed.add((event.line, event.what))
                if status == "real" and not is_fed:
                    real = True
                elif status == "hollow" or is_fed:
                    hollow_calls.append(event.what)
            elif event.callees:
                if all(self.name_status(c, entry.file) == "hollow" or (event.line, c) in fed for c in event.callees):
                    void |= event.targets
            elif event.names and event.names <= void:
                void |= event.targets
        entry.void, entry.fed = frozenset(void), frozenset(fed)
        entry.hollow_calls = list(dict.fromkeys(hollow_calls))
        if definition.kind == "class":
            members = [e.status for e in self.by_file[entry.file] if e.definition.parent == entry.index]
            if real or "real" in members:
                return "real"
            return "hollow" if hollow_calls or "hollow" in members else "plumbing"
        if real:
            return "real"
        return "hollow" if hollow_calls else "plumbing"

    # Programs and shell -------------------------------------------------------------------------------

    def program(self, path: str) -> Verdict:
        """What running the program at `path` (as a command names it) does."""
        cached = self._programs.get(path)
        if cached is not None:
            return cached
        self._programs[path] = Verdict("hollow", "runs itself")  # a cycle of scripts does nothing more
        module = path.startswith(MODULE)
        path = path.removeprefix(MODULE)
        found = resolve_program(path, list(self.files))
        if found is None and module:
            verdict = Verdict("real")  # a module the submission does not hold is a library's
        elif found is None and resolve_program(path, list(self.reference_paths)) is not None:
            verdict = Verdict("real")
        elif found is None:
            verdict = Verdict("plumbing") if self.unseen_files else Verdict("hollow", f"runs `{path}`{_MISSING}")
        elif not self.files[found][1]:
            verdict = Verdict("real")  # a file the diff shows in part: what else it runs is unknown
        elif found.endswith(".py"):
            verdict = self._python_program(found)
        elif found.endswith((".sh", ".bash")):
            inner = self._shell_lines(self.files[found][0].split("\n"))
            verdict = inner if inner.status != "hollow" else Verdict(
                "hollow", f"runs `{_short(found)}`, which {inner.why.replace('runs', 'only runs', 1)}")
        else:
            verdict = Verdict("real")
        self._programs[path] = verdict
        return verdict

    def _python_program(self, path: str) -> Verdict:
        module = next(e for e in self.by_file[path] if e.definition.kind == "module")
        if module.status != "hollow":
            return Verdict(module.status)
        if not module.definition.events:
            return Verdict("hollow", f"runs `{_short(path)}`, which defines code but runs none of it")
        return Verdict("hollow", f"runs `{_short(path)}`, which only calls "
                                 f"{self._calls_words(module.hollow_calls, path)}")

    def _calls_words(self, names: list[str], file: str) -> str:
        """"placeholders (`f`, `g`)" for hollow calls, naming the placeholders under them, and the real code
        fed only their results ("and hands what they return to `plot`")."""
        fed = [f"`{n}`" for n in names if self.name_status(n, file) != "hollow"]
        roots: list[str] = []
        seen: set[str] = set()
        stack = [n for n in reversed(names) if self.name_status(n, file) == "hollow"]
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            entries = [e for e in self.by_name.get(name, []) if e.file == file] or self.by_name.get(name, [])
            inner = [c for e in entries for c in e.hollow_calls if self.name_status(c, e.file) == "hollow"]
            if inner and not any(e.definition.placeholder for e in entries):
                stack.extend(reversed(inner))
            else:
                roots.append(f"`{name}`")
        words = f"placeholders ({_listed(roots)})" if roots else "code fed only placeholders' results"
        return words + (f" and hands what they return to {_listed(fed)}" if fed and roots else "")

    def _shell_lines(self, lines: Sequence[str]) -> Verdict:
        """What shell lines do: real when a command does work or runs a real program; hollow when their only
        work is running hollow or missing programs; plumbing otherwise."""
        real = False
        hollow: list[str] = []
        for command in commands(lines):
            kind, target = shell_command(command)
            if kind == "real":
                real = True
            elif kind == "program":
                verdict = self.program(target)
                if verdict.status == "real":
                    real = True
                elif verdict.status == "hollow":
                    hollow.append(verdict.why)
        if real:
            return Verdict("real")
        if hollow:
            missing = [why.split("`")[1] for why in hollow if why.endswith(_MISSING)]
            others = [why for why in dict.fromkeys(hollow) if not why.endswith(_MISSING)]
            if missing:
                names = _listed([f"`{m}`" for m in dict.fromkeys(missing)])
                others.insert(0, f"runs {names}, which the submission does not hold")
            return Verdict("hollow", "; ".join(others))
        return Verdict("plumbing")

    # Units ----------------------------------------------------------------------------------------------

    def unit_status(self, unit: CodeUnit) -> tuple[Status, str]:
        """What `unit` does, and why when it is hollow (a unit of another language is "real": unknown)."""
        if unit.language == "bash":
            verdict = self._shell_lines(unit.executable_lines)
            name = unit.file_path.rsplit("/", 1)[-1]
            return verdict.status, f"`{name}` lines {unit.start_line}-{unit.end_line} only {verdict.why}" \
                if verdict.status == "hollow" else ""
        entries = self.by_file.get(unit.file_path)
        if unit.language != "python" or not entries or not self.files[unit.file_path][1]:
            return "real", ""
        inside = [e for e in entries if e.definition.kind != "module"
                  and unit.start_line <= e.definition.start_line and e.definition.end_line <= unit.end_line]
        if any(e.status == "real" for e in inside):
            return "real", ""
        inside_ids = {e.index for e in inside}
        lines = set(unit.line_numbers)
        loose_real, loose_hollow = False, []
        for entry in entries:
            if entry.index in inside_ids:
                continue
            for event in entry.definition.events:
                if event.line not in lines:
                    continue
                if event.kind == "real":
                    loose_real = True
                elif event.kind == "call":
                    status = self.name_status(event.what, entry.file)
                    is_fed = (event.line, event.what) in entry.fed
                    if status == "real" and not is_fed:
                        loose_real = True
                    elif status == "hollow" or is_fed:
                        loose_hollow.append(event.what)
        if loose_real:
            return "real", ""
        hollow_inside = [e for e in inside if e.status == "hollow" and (e.definition.parent not in inside_ids)]
        if not hollow_inside and not loose_hollow:
            return "plumbing", ""
        parts = [self._def_reason(e) for e in hollow_inside[:3]]
        if loose_hollow:
            parts.append(f"lines {unit.start_line}-{unit.end_line} only call "
                         f"{self._calls_words(list(dict.fromkeys(loose_hollow)), unit.file_path)}")
        return "hollow", "; ".join(parts)

    def hollow_callees(self, unit: CodeUnit) -> set[tuple[str, str]]:
        """(name, file of its definition) of the hollow functions the unit's own lines call."""
        lines = set(unit.line_numbers)
        found: set[tuple[str, str]] = set()
        for entry in self.by_file.get(unit.file_path, []):
            for event in entry.definition.events:
                if event.kind == "call" and event.line in lines and \
                        self.name_status(event.what, entry.file) == "hollow":
                    for callee in self.by_name.get(event.what, []):
                        if callee.status == "hollow":
                            found.add((event.what, callee.file))
        return found

    def _def_reason(self, entry: _Def) -> str:
        definition = entry.definition
        where = f"`{definition.name}` (line {definition.start_line})"
        if definition.kind == "function" and definition.placeholder:
            why = f" ({definition.placeholder_why})" if definition.placeholder_why else ""
            return f"{where} is a placeholder{why}"
        if id(entry) in self.pins:
            return f"{where} {self.pins[id(entry)]}"
        if definition.kind == "class":
            return f"{where} holds only placeholders"
        return f"{where} only calls {self._calls_words(entry.hollow_calls, entry.file)}"


def _listed(items: list[str], limit: int = 3) -> str:
    head = ", ".join(items[:limit])
    return f"{head} and {len(items) - limit} more" if len(items) > limit else head


def _short(path: str) -> str:
    return "/".join(path.split("/")[-2:])
