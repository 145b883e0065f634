"""What only a requirement's cited lines do, the item index that ranks candidates, and a notebook
reference read with its imports."""

from __future__ import annotations

import json

from judge.checks.requirement.acts import SubmissionActs
from judge.checks.requirement.features import MATCH_WEIGHTS, Candidates, ReferenceProfile
from judge.models import Submission
from judge.reference import ReferenceIndex
from judge.reference.behaviour import Scope, behaviour_of, imports_in
from judge.reference.behaviour_index import BehaviourIndex
from judge.reference.behaviour_similarity import Frequencies, containment, pooled_containment
from judge.reference.code_scope import bound_names
from judge.reference.core import distinct_items, merged
from judge.submission.view import SubmissionView
from tests.judge.reference.reference_fixtures import REFERENCE, all_added_diff

SCRIPT = '''import torch

def load(path):
    model = torch.load(path)
    model.eval()
    return model

def export(model, path):
    model.eval()
    torch.save(model.state_dict(), path)
'''


def test_distinct_items_are_the_cited_lines_items_no_other_code_has() -> None:
    whole = behaviour_of(SCRIPT, "python")
    core = behaviour_of("    model = torch.load(path)\n    model.eval()\n", "python", Scope(imports_in(SCRIPT)))
    distinct = distinct_items(core, whole)
    assert "torch.load" in distinct.calls  # only `load` loads
    assert ".eval" not in distinct.calls  # `export` calls it too
    assert pooled_containment(distinct, behaviour_of(SCRIPT.split("def export")[1], "python")) == 0.0
    assert pooled_containment(distinct, whole) == 1.0


def test_merged_sums_every_channel() -> None:
    parts = [behaviour_of(text, "python") for text in ("a = f(1)\n", "b = g(2)\nc = a.h(b)\n")]
    both = merged(parts)
    assert both.literals == parts[0].literals + parts[1].literals
    assert both.lines == parts[0].lines + parts[1].lines
    assert both.acts == parts[0].acts + parts[1].acts


def test_the_index_gives_the_same_containment_as_comparing_one_by_one() -> None:
    texts = ["x = torch.load(p)\nx.eval()\n", "torch.save(m.state_dict(), p)\n", "print('done')\n", "y = 0.001\n"]
    behaviours = {n: behaviour_of(text, "python") for n, text in enumerate(texts)}
    reference = behaviour_of(SCRIPT, "python")
    weights = Frequencies.of(behaviours.values())
    for channel in ("calls", "lines", "literals"):
        found = BehaviourIndex(behaviours, [channel]).containment(getattr(reference, channel), channel, weights)
        for n, behaviour in behaviours.items():
            expected = containment(getattr(reference, channel), getattr(behaviour, channel), channel, weights)
            assert abs(found.get(n, 0.0) - expected) < 1e-12
        assert all(value > 0 for value in found.values())  # a candidate sharing nothing is not visited


def _notebook(cells: list[str]) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": [line + "\n" for line in cell.split("\n")]} for cell in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def test_a_notebook_reference_resolves_the_names_its_cells_import() -> None:
    text = _notebook(["import pandas as pd", "frame = pd.read_csv('data.csv')\nframe = frame.dropna()"])
    row = next(n for n, line in enumerate(text.split("\n"), start=1) if "read_csv" in line)
    profile = ReferenceProfile(ReferenceIndex({"analysis.ipynb": text}))
    reference = profile.requirements([f"Load the data (/workspace/analysis.ipynb:{row})"])[0]
    assert reference is not None and reference.cited
    assert "pandas.read_csv" in reference.core.calls
    assert "_ = _ . read_csv ( 'data.csv' )" in reference.core.lines


def test_a_reference_profile_keeps_what_only_the_cited_lines_do() -> None:
    profile = ReferenceProfile(ReferenceIndex(REFERENCE))
    reference = profile.requirements(["Use AdamW with weight decay (/workspace/src/train.py:13)"])[0]
    assert reference is not None
    assert "torch.optim.AdamW" in reference.distinct.calls
    assert not reference.rest_lines & reference.core.lines


def test_bound_names_are_what_the_code_defines_and_imports() -> None:
    text = ("import numpy as np\nfrom x import a, b as c\n\ndef f(self, p, q: int = 3, *rest, **options):\n"
            "    for i, (j, k) in enumerate(p):\n        y = [w for w in q]\n    with open(p) as handle:\n"
            "        (t, u) = 1, 2\n    obj.attr = 5\n    call(keyword=1)\n    return np.mean(y)\n")
    names = bound_names(text)
    assert {"np", "a", "c", "f", "p", "q", "rest", "options", "i", "j", "k", "y", "w", "handle", "t", "u"} <= names
    assert not {"obj", "attr", "call", "keyword", "enumerate", "open", "mean"} & names


def test_a_line_reads_the_same_whether_its_import_is_shown_or_not() -> None:
    imported = behaviour_of("import torch\n\nmodel = torch.load(path)\n", "python")
    code = "model = torch.load(path)\n"
    alone = behaviour_of(code, "python", Scope(bound=frozenset(bound_names(code))))
    assert set(alone.lines) <= set(imported.lines)
    assert ".load" in alone.calls and "torch.load" in imported.calls


def test_a_bare_call_keeps_its_name_only_when_the_code_does_not_define_it() -> None:
    code = "def helper(x):\n    return x + 1\n\nresult = helper(Experiment(config))\n"
    found = behaviour_of(code, "python", Scope(bound=frozenset(bound_names(code))))
    assert ".Experiment" in found.calls  # imported where the diff does not show
    assert ".helper" not in found.calls  # defined here: a renamer may rename it
    unknown = behaviour_of(code, "python")  # bound names unknown: as before, no bare call kept
    assert ".Experiment" not in unknown.calls


def test_candidates_rank_units_as_comparing_each_with_the_reference_would() -> None:
    profile = ReferenceProfile(ReferenceIndex(REFERENCE))
    reference = profile.requirements(["Use AdamW with weight decay (/workspace/src/train.py:13)"])[0]
    assert reference is not None
    diff = all_added_diff(REFERENCE)
    acts = SubmissionActs.of(SubmissionView.build(Submission(submission_id="s", task_id="t", diff=diff)))
    acting = [n for n in range(len(acts.units)) if acts.acts(n)]
    ranked = Candidates.of(acts, acting).ranked(reference, profile.frequencies)
    weights = profile.frequencies
    for n, score in ranked:
        unit = acts.behaviour(n)
        expected = sum(weight * containment(getattr(reference.core if name.startswith("core") else reference.context,
                                                    name.split("_", 1)[1]),
                                            getattr(unit, name.split("_", 1)[1]), name.split("_", 1)[1], weights)
                       for name, weight in MATCH_WEIGHTS.items())
        assert abs(score - expected) < 1e-12
    assert [score for _, score in ranked] == sorted((score for _, score in ranked), reverse=True)
    assert acts.units[ranked[0][0]].name == "train"
