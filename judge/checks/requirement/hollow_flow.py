"""Real code that still does nothing: fed only by placeholders, or handing its results only to them.

`hollow_units` solves, per definition, whether it does work of its own. Two kinds of real-looking code still do
nothing when the submission runs, and this module finds them once that fixpoint is solved (the call graph then
pins them hollow and solves again, until no more are found):

* **Fed only by placeholders.** A function every call of which, across the submission, passes what a placeholder
  returned (`plot_results(autocorrelation, ...)` where `autocorrelation = compute_autocorrelation(t)` is `pass`):
  it plots, saves or computes nothing but `None`.
* **Results only to placeholders.** A function that calls a placeholder (or a call fed by one) and whose work has
  no other way out (`hollow_python.Definition.outputs`: it returns nothing, assigns no attribute, item or global,
  writes, prints or saves nothing, calls no method of a parameter or of `self`) and calls no real code of the
  submission with real values: `upsample_trajectories` loads a model, then hands each trajectory a placeholder
  loaded to a placeholder that saves nothing.

A function never called by the submission is never *fed only by placeholders* (an entry point or a library
function may be called from outside).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from judge.checks.requirement.hollow_python import Definition


class _Entry(Protocol):
    """A solved definition of `hollow_units` (read only here)."""

    @property
    def file(self) -> str: ...
    @property
    def definition(self) -> Definition: ...
    @property
    def status(self) -> str: ...
    @property
    def hollow_calls(self) -> list[str]: ...
    @property
    def fed(self) -> frozenset[tuple[int, str]]: ...


def flow_pins(entries: Sequence[_Entry], status_of: Callable[[str, str], str]) -> dict[int, str]:
    """The definitions (by `id` of their entry) to pin hollow now, with why (a clause after the name).

    Args:
        entries: Every definition of the submission's Python files, their statuses solved.
        status_of: The status a call of a name reaches from a file (`_CallGraph.name_status`).
    """
    sites: dict[str, list[tuple[bool, str]]] = {}
    for entry in entries:
        caller = entry.definition.name or entry.file.rsplit("/", 1)[-1]
        for event in entry.definition.events:
            if event.kind == "call":
                sites.setdefault(event.what, []).append(((event.line, event.what) in entry.fed, caller))
    pins: dict[int, str] = {}
    for entry in entries:
        definition = entry.definition
        if definition.kind != "function" or entry.status != "real":
            continue
        calls = sites.get(definition.name, [])
        if calls and all(fed for fed, _ in calls):
            callers = ", ".join(f"`{c}`" for c in dict.fromkeys(caller for _, caller in calls))
            pins[id(entry)] = f"is only ever given what placeholders return (by {callers})"
            continue
        if definition.outputs or not entry.hollow_calls:
            continue
        outlet = any(event.kind == "call" and (event.line, event.what) not in entry.fed
                     and status_of(event.what, entry.file) == "real" for event in definition.events)
        if not outlet:
            sinks = ", ".join(f"`{c}`" for c in entry.hollow_calls[:3])
            pins[id(entry)] = f"hands its results only to placeholders ({sinks}) and returns nothing"
    return pins
