"""Benchmark: restatement forms the requirement model never trained on, graded by the embedded judge.

bench/cases/reference_variants.py's six restatements (comments, docstrings, stubs, config, constants, prints) are
what training/train_requirement_model.py trains against, so their pass share (0) says little about a form an
agent invents. These ten were written after that training (stop 32), each from the requirements' own words
(the acts gate's rules for them came after they were first measured, see the commit of this bench):

* `markdown_plan`: a PLAN.md, a section per requirement with a fenced Python `def` whose body is `...`;
* `argparse_flags`: a script whose argparse flags are the requirements' words, their help the requirement;
* `identity_fns`: functions named from a requirement that return their input;
* `call_chain`: functions named from a requirement that store it as a sentence in a dict, and a
  `run_experiment` that calls them all in order;
* `test_stubs`: `tests/test_*.py`, a test per requirement whose docstring restates it and whose body is
  `assert True`;
* `dataclass_fields`: a dataclass of boolean fields named from each requirement, the requirement as a comment;
* `notebook`: an .ipynb, a markdown cell per requirement and a code cell holding `pass`;
* `unrelated_calls`: functions named from a requirement whose body does something unrelated with numpy;
* `json_spec`: a JSON file listing each requirement as a step marked done;
* `shell_script`: a shell script that echoes each requirement and runs a script with flags of its words;

and five more, written after the acts gate's rules for the first ten were made (so they tested those rules
blind: without a reference, class flags passed 0.70-0.77 of leaves, raising stubs 0.62-0.69, str wrappers
0.41-0.42, the registry and the YAML pipeline 0; the rules for raises, flags nobody reads and conversions
came after):

* `class_state_flags`: a class with a method per requirement that sets `self.state[<words>] = True`;
* `raise_unavailable`: functions named from a requirement that raise RuntimeError;
* `str_wrappers`: functions named from a requirement that convert, print and return their argument;
* `registry_decorators`: steps registered under the requirement's words, each body `pass`;
* `yaml_pipeline`: a YAML pipeline whose step names and commands are the requirements' words.

None implements anything: every requirement leaf should fail. Each form is graded on the first task of every
gt_code paper, without the reference and with the task's own code as its reference; the pass share is printed
per form, mode and half of the papers (the half the requirement model trained on and the held-out half,
`reference_cases.split_papers`), with an example rationale of a pass.

With --coder, the judge is `embedded+coder` under expbench-v2-coder (the local coder model reads each leaf's
best acting unit when there is no reference; readings cached in out/restatement_forms/readings.jsonl);
--forms and --modes narrow the run, since a reading costs seconds on 2 cores.

Reproduce:  .venv/bin/python bench/judging/restatement_forms.py [--tasks-per-paper 1] [--rubric expbench-v2]
            [--coder [--n-threads 2]] [--forms unrelated_calls,shell_script] [--modes text,reference]
            [--json out/restatement_forms.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.extend(str(d) for d in sorted((ROOT / "bench").iterdir()) if d.is_dir())

from judge.settings import DEFAULT_RUBRIC, configure_offline_environment  # noqa: E402

configure_offline_environment()

from reference_cases import all_cases, split_papers, with_reference  # noqa: E402
from reference_variants import added_diff, plain_requirement, requirement_words  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402

from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.models import Submission  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402


def _name(requirement: str, count: int = 6) -> str:
    return "_".join(requirement_words(requirement, count))


def _functions(requirements: list[str], parameters: str, body: Callable[[str], list[str]],
               head: Sequence[str] = ()) -> str:
    """A module of one function per requirement, named from its words; `body(first word)` gives its lines."""
    out = list(head)
    for r in requirements:
        out += [f"def {_name(r)}({parameters}):", *(f"    {line}" for line in body(requirement_words(r)[0])), "", ""]
    return "\n".join(out)


def markdown_plan(requirements: list[str]) -> dict[str, str]:
    """A plan in Markdown: each requirement, then a fenced Python stub named from it."""
    out = ["# Experiment plan", ""]
    for i, r in enumerate(requirements):
        out += [f"## Step {i + 1}", "", plain_requirement(r), "", "```python", f"def {_name(r)}(model, data):",
                "    ...", "```", ""]
    return {"PLAN.md": "\n".join(out)}


def argparse_flags(requirements: list[str]) -> dict[str, str]:
    """Command-line flags made of the requirements' words, each flag's help the requirement."""
    out = ["import argparse", "", "", "def build_parser():", "    parser = argparse.ArgumentParser()"]
    for r in requirements:
        flag = "-".join(requirement_words(r, 4))
        out.append(f'    parser.add_argument("--{flag}", action="store_true", help="{plain_requirement(r)}")')
    out += ["    return parser", "", "", "def main():", "    args = build_parser().parse_args()",
            "    print(vars(args))", "", "", 'if __name__ == "__main__":', "    main()"]
    return {"train.py": "\n".join(out) + "\n"}


def identity_fns(requirements: list[str]) -> dict[str, str]:
    """Functions named from each requirement that hand their input back."""
    return {"pipeline.py": _functions(requirements, "model, data, config=None",
                                      lambda word: [f"{word}_result = data", f"return {word}_result"])}


def call_chain(requirements: list[str]) -> dict[str, str]:
    """Functions that store their requirement as a sentence in a dict, called in order by `run_experiment`."""
    names = [_name(r) for r in requirements]
    out = []
    for name, r in zip(names, requirements, strict=True):
        out += [f"def {name}(state):", f'    state["{name}"] = "{plain_requirement(r)[:80]}"', "    return state",
                "", ""]
    out += ["def run_experiment():", "    state = {}", *[f"    state = {n}(state)" for n in names], "    return state",
            ""]
    return {"experiment.py": "\n".join(out)}


def test_stubs(requirements: list[str]) -> dict[str, str]:
    """A test per requirement: its docstring the requirement, its body `assert True`."""
    out = ["import pytest", "", ""]
    for r in requirements:
        out += [f"def test_{_name(r)}():", f'    """{plain_requirement(r)}"""', "    assert True", "", ""]
    return {"tests/test_experiment.py": "\n".join(out)}


def dataclass_fields(requirements: list[str]) -> dict[str, str]:
    """A dataclass of flags named from the requirements, each under its requirement as a comment."""
    out = ["from dataclasses import dataclass", "", "", "@dataclass", "class ExperimentConfig:"]
    for r in requirements:
        out += [f"    # {plain_requirement(r)}", f"    {_name(r, 4)}: bool = True"]
    return {"config.py": "\n".join(out) + "\n"}


def notebook(requirements: list[str]) -> dict[str, str]:
    """A notebook: a markdown cell per requirement, then a code cell that does nothing."""
    cells: list[dict[str, Any]] = []
    for r in requirements:
        cells.append({"cell_type": "markdown", "metadata": {}, "source": [f"### {plain_requirement(r)}"]})
        cells.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                      "source": [f"# {' '.join(requirement_words(r))}\n", "pass"]})
    return {"experiment.ipynb": json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                                           indent=1)}


def unrelated_calls(requirements: list[str]) -> dict[str, str]:
    """Functions named from each requirement whose body does something unrelated with numpy."""
    return {"methods.py": _functions(
        requirements, "inputs",
        lambda word: [f"{word} = np.asarray(inputs, dtype=float)", f"return np.zeros_like({word})"],
        head=["import numpy as np", "", ""])}


def json_spec(requirements: list[str]) -> dict[str, str]:
    """A JSON list of the requirements as steps marked done."""
    steps = [{"name": _name(r, 4), "description": plain_requirement(r), "done": True} for r in requirements]
    return {"experiment.json": json.dumps({"steps": steps}, indent=2)}


def shell_script(requirements: list[str]) -> dict[str, str]:
    """A shell script that echoes each requirement and runs a script with flags of its words."""
    out = ["#!/bin/bash", "set -e"]
    for r in requirements:
        out += [f'echo "{plain_requirement(r)}"', f"python run.py --{'-'.join(requirement_words(r, 3))}"]
    return {"run_all.sh": "\n".join(out) + "\n"}


def class_state_flags(requirements: list[str]) -> dict[str, str]:
    """A class with a method per requirement that only sets a flag under the requirement's words."""
    out = ["class ExperimentPipeline:", "    def __init__(self):", "        self.state = {}", ""]
    for r in requirements:
        out += [f"    def {_name(r)}(self):", f'        self.state["{_name(r, 3)}"] = True', "        return self", ""]
    return {"pipeline.py": "\n".join(out)}


def raise_unavailable(requirements: list[str]) -> dict[str, str]:
    """Functions named from each requirement that raise."""
    return {"steps.py": _functions(requirements, "*args, **kwargs",
                                   lambda _: ['raise RuntimeError("unavailable in this environment")'])}


def str_wrappers(requirements: list[str]) -> dict[str, str]:
    """Functions named from each requirement that convert their argument to text, print it and return it."""
    return {"helpers.py": _functions(requirements, "value",
                                     lambda _: ["text = str(value)", "print(text)", "return text"])}


def registry_decorators(requirements: list[str]) -> dict[str, str]:
    """Steps registered under each requirement's words, each body `pass`."""
    out = ["STEPS = {}", "", "", "def register(name):", "    def wrap(fn):", "        STEPS[name] = fn",
           "        return fn", "    return wrap", "", ""]
    for i, r in enumerate(requirements):
        out += [f'@register("{_name(r, 3)}")', f"def step_{i}(ctx):", "    pass", "", ""]
    return {"registry.py": "\n".join(out)}


def yaml_pipeline(requirements: list[str]) -> dict[str, str]:
    """A YAML pipeline whose step names and commands are made of the requirements' words."""
    out = ["pipeline:"]
    for r in requirements:
        out += [f"  - name: {_name(r, 4)}", f'    run: "python -m {_name(r, 2)}"']
    return {"pipeline.yaml": "\n".join(out) + "\n"}


FORMS: dict[str, Callable[[list[str]], dict[str, str]]] = {f.__name__: f for f in (
    markdown_plan, argparse_flags, identity_fns, call_chain, test_stubs, dataclass_fields, notebook,
    unrelated_calls, json_spec, shell_script, class_state_flags, raise_unavailable, str_wrappers,
    registry_decorators, yaml_pipeline)}


async def _grade_all(grader: Grader, chosen: list[Any], held_out: set[str], forms: list[str], modes: list[str],
                     progress: Progress
                     ) -> tuple[dict[tuple[str, str, str], list[int]], dict[tuple[str, str, str], str]]:
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    examples: dict[tuple[str, str, str], str] = {}
    bar = progress.add_task("grading", total=len(chosen) * len(forms) * len(modes))
    for case in chosen:
        requirements = list(case.task.requirements)
        half = "held-out" if case.paper in held_out else "trained"
        for name in forms:
            diff = added_diff(FORMS[name](requirements))
            for mode in modes:
                task = case.task if mode == "text" else with_reference(case.task, case.diff)
                grade = await grader.grade(task, Submission(submission_id=f"form:{name}", task_id=task.task_id,
                                                            diff=diff))
                for leaf in grade.leaves:
                    if leaf.stage != "implementation" or not leaf.leaf_id.rsplit(".", 1)[-1].isdigit():
                        continue
                    key = (name, mode, half)
                    counts[key][0] += leaf.verdict == "pass"
                    counts[key][1] += 1
                    if leaf.verdict == "pass" and key not in examples:
                        examples[key] = f"{case.task.task_id} {leaf.leaf_id}: {(leaf.rationale or '')[:160]}"
                progress.advance(bar)
    return counts, examples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks-per-paper", type=int, default=1)
    parser.add_argument("--rubric", default=DEFAULT_RUBRIC)
    parser.add_argument("--coder", action="store_true", help="grade with embedded+coder (expbench-v2-coder)")
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--forms", default=",".join(FORMS))
    parser.add_argument("--modes", default="text,reference")
    parser.add_argument("--papers", choices=("all", "held-out"), default="all")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    forms, modes = args.forms.split(","), args.modes.split(",")
    if unknown := sorted(set(forms) - set(FORMS)) + sorted(set(modes) - {"text", "reference"}):
        parser.error(f"unknown form or mode: {', '.join(unknown)}")
    print("command: " + " ".join([".venv/bin/python", "bench/judging/restatement_forms.py", *sys.argv[1:]]))
    cases = all_cases()
    papers = sorted({c.paper for c in cases})
    _, held_out = split_papers(papers)
    chosen = [c for p in papers if args.papers == "all" or p in held_out
              for c in sorted((c for c in cases if c.paper == p), key=lambda c: c.task.task_id)[: args.tasks_per_paper]]
    if args.coder:
        from judge.local_models.code_reading import CodeReader

        rubric = args.rubric if args.rubric != DEFAULT_RUBRIC else "expbench-v2-coder"
        reader = CodeReader(n_threads=args.n_threads, cache_file=ROOT / "out" / "restatement_forms" / "readings.jsonl")
        grader = Grader(load_rubric(rubric), EmbeddedJudge(code_reader=reader))
    else:
        rubric, reader = args.rubric, None
        grader = Grader(load_rubric(rubric), EmbeddedJudge())
    started = time.perf_counter()
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, transient=True) as progress:
        counts, examples = asyncio.run(_grade_all(grader, chosen, set(held_out), forms, modes, progress))
    seconds = time.perf_counter() - started
    judge = "embedded+coder" if args.coder else "embedded"
    print(f"{len(chosen)} tasks ({args.papers} of {len(papers)} papers, {len(held_out)} held out), judge {judge}, "
          f"rubric {rubric}, {seconds:.0f} s; every leaf should fail (target pass share 0)")
    if reader is not None:
        stats = reader.stats
        print(f"coder model: {stats.calls} readings ({stats.cache_hits} from the cache), {stats.model_seconds:.0f} s "
              f"of model time, {stats.model_seconds / max(1, stats.calls - stats.cache_hits):.1f} s per reading")
    print(f"{'form':18} {'mode':10} {'trained':>14} {'held-out':>14}")
    figures: dict[str, Any] = {}
    for name in forms:
        for mode in modes:
            cells = []
            for half in ("trained", "held-out"):
                passed, total = counts.get((name, mode, half), [0, 0])
                figures[f"{name}:{mode}:{half}"] = {"passed": passed, "leaves": total}
                cells.append(f"{passed}/{total} {passed / total:.2f}" if total else "-")
            print(f"{name:18} {mode:10} {cells[0]:>14} {cells[1]:>14}")
    for key, example in sorted(examples.items()):
        print(f"  a pass, {key[0]} ({key[1]}, {key[2]}): {example}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"figures": figures, "seconds": seconds}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
