"""Values a requirement states are read from its text and looked for in the code, in any notation."""

from __future__ import annotations

import pytest

from judge.checks.requirement.rationale import values_verdict
from judge.checks.requirement.stated_values import check_values, parse_number, reference_values, stated_values
from judge.models import ReferenceSpan


def _status(requirement: str, lines: list[str]) -> dict[str, str]:
    found = check_values(stated_values(requirement), [(f"run.py:{n}", line) for n, line in enumerate(lines, 1)])
    return {f.stated.text: f.status for f in found}


def test_reads_numbers_with_their_names_and_identifiers() -> None:
    values = {v.text: v for v in stated_values(
        "Step 2: train ResNet-50 on CIFAR-10 for 100 epochs with a learning rate of 1e-4 and hidden size (4096), "
        "as in Figure 3 (/workspace/train.py:10-20)")}
    assert set(values) == {"ResNet-50", "CIFAR-10", "100", "1e-4", "4096"}  # not Figure 3, not the line range
    assert values["100"].unit == "epochs"
    assert values["1e-4"].names == ("learning", "rate")
    assert values["4096"].names == ("hidden", "size")
    assert values["CIFAR-10"].stem == "cifar"


@pytest.mark.parametrize(("literal", "number"), [("1e-4", 1e-4), ("0.0001", 1e-4), ("4_096", 4096.0),
                                                  ("4,096", 4096.0), (".5", 0.5)])
def test_equal_values_in_other_notations(literal: str, number: float) -> None:
    assert parse_number(literal) == pytest.approx(number)


def test_value_held_in_another_notation_and_through_a_flag_or_argument_default() -> None:
    requirement = "Train for 100 epochs with a learning rate of 1e-4 and a sequence length of 96"
    assert _status(requirement, ["opt = Adam(params, lr=0.0001)", "python train.py --epochs 100",
                                 "parser.add_argument('--seq_len', type=int, default=96)"]) == \
        {"100": "held", "1e-4": "held", "96": "held"}


def test_a_different_value_bound_to_the_name_differs() -> None:
    found = check_values(stated_values("use a sequence length of 96 and freeze all but the last 12 layers"),
                         [("m.py:3", "seq_len = 192"), ("m.py:9", "for p in model.layers[:-24]:")])
    assert [(f.stated.text, f.status, f.location) for f in found] == \
        [("96", "differs", "m.py:3"), ("12", "differs", "m.py:9")]


def test_an_identifier_with_another_number_differs() -> None:
    assert _status("Evaluate on CIFAR-10", ["dataset = load('cifar100')"]) == {"CIFAR-10": "differs"}
    assert _status("Evaluate on CIFAR-10", ["dataset = load('cifar_10')"]) == {"CIFAR-10": "held"}


def test_a_value_nowhere_is_unseen_and_an_unnamed_occurrence_holds() -> None:
    assert _status("hidden size (4096)", ["x = torch.zeros(10)"]) == {"4096": "unseen"}
    assert _status("hidden size (4096)", ["layer = nn.Linear(4096, 4096)"]) == {"4096": "held"}


def test_a_one_word_name_does_not_bind_an_unrelated_setting() -> None:
    # "size" alone is not "hidden size": batch_size = 32 says nothing about it.
    assert _status("hidden size (4096)", ["batch_size = 32"]) == {"4096": "unseen"}


def test_reference_span_values_are_stated_values() -> None:
    span = ReferenceSpan.model_construct(file="a.py", start_line=1, end_line=3, origin="cited", unit=None,
                                         text="self.hidden_size = 4096\nparser.add_argument('--epochs', 100)\n"
                                              "x = f(a, 5)\nif k == 1: pass")
    assert {(v.text, v.names) for v in reference_values([span])} == {("4096", ("hidden", "size")),
                                                                      ("100", ("epochs",))}


def test_a_differing_value_fails_or_makes_partial_where_others_hold() -> None:
    from judge.checks.requirement.payload import StatedValueCheck
    differs = StatedValueCheck(stated="96", name="sequence length", status="differs", found="seq_len = 192",
                               location="m.py:3")
    held = StatedValueCheck(stated="1e-4", name="learning rate", status="held")
    index, flags, note = values_verdict(0, [differs])
    assert (index, flags) == (2, ["stated_value_mismatch"]) and "seq_len = 192" in note and "96" in note
    assert values_verdict(0, [differs, held])[0] == 1
    assert values_verdict(0, [held]) == (0, [], " Stated values found: `1e-4`.")


def test_a_value_nowhere_in_the_code_keeps_a_pass_at_partial_without_a_flag() -> None:
    from judge.checks.requirement.payload import StatedValueCheck
    unseen = StatedValueCheck(stated="96", name="sequence length", status="unseen")
    index, flags, note = values_verdict(0, [unseen])
    assert (index, flags) == (1, []) and "Not found in the code it reads: `96`" in note
    assert values_verdict(2, [unseen])[0] == 2  # never lifts a fail


def test_a_multiplier_word_scales_the_value() -> None:
    (value,) = stated_values("Train for 1 million frames")
    assert value.values == (1e6,) and value.unit == "frames"
    assert _status("Train for 1 million frames", ["total_frames: 1_000_000"]) == {"1": "held"}
    assert _status("Train for 1 million frames", ["total_frames: 500_000"]) == {"1": "differs"}


def test_a_list_is_held_only_with_every_member() -> None:
    requirement = "Run with topmin_max values (0.1, 0.3, 0.5)"
    assert _status(requirement, ["for v in [0.1, 0.3, 0.5]:", "    run(topmin_max=v)"]) == {"0.1, 0.3, 0.5": "held"}
    assert _status(requirement, ["for v in [0.1, 0.3]:", "    run(topmin_max=0.7)"]) == \
        {"0.1, 0.3, 0.5": "differs"}
