"""Answer schemas: what a call's model sees is exactly what pydantic would generate for its layout."""

from __future__ import annotations

import json
import random

import pytest

from judge.checks.claim_vs_diff.check import CLAIM_LABELS
from judge.judges.llm_schemas import BINARY_LABELS, build_answer_model, pydantic_schema

LABEL_SETS = [BINARY_LABELS, CLAIM_LABELS, ("met", "partly", "missing"), ("only",)]


@pytest.mark.parametrize("seed", range(5))
def test_the_fast_schema_is_pydantics_schema_key_order_included(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20):
        layout = {f"L{i + 1}": rng.choice(LABEL_SETS) for i in range(rng.randint(1, 30))}
        model = build_answer_model(layout)
        fast = model.model_json_schema()
        assert json.dumps(fast) == json.dumps(pydantic_schema(model))
        slots = fast["properties"]["verdicts"]["prefixItems"]
        assert [(s["properties"]["leaf_id"]["const"], tuple(s["properties"]["verdict"]["enum"])) for s in slots] \
            == list(layout.items())


def test_a_label_outside_the_leafs_own_set_is_refused_with_shared_item_models() -> None:
    # Two layouts with the same aliases and label union share one item model; each keeps its own rules.
    first = build_answer_model({"L1": BINARY_LABELS, "L2": ("met", "missing")})
    second = build_answer_model({"L1": ("met", "missing"), "L2": BINARY_LABELS})
    item = {"quotes": [], "rationale": "r"}
    ok = {"verdicts": [{**item, "leaf_id": "L1", "verdict": "pass"}, {**item, "leaf_id": "L2", "verdict": "met"}]}
    first.model_validate(ok)
    with pytest.raises(ValueError, match="not allowed for L1"):
        second.model_validate(ok)
