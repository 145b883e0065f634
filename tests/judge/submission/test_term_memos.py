"""The terms of words, texts and requirement lists are worked out once and kept: what is kept is what
working them out again gives, and callers get results of their own to change."""

from __future__ import annotations

from judge.submission import code_terms
from judge.submission.code_terms import MEMO_MAX_CHARS, path_terms, term_set, terms
from judge.submission.distinguishing import _text_terms, distinguishing_terms, evidence_terms
from judge.submission.view import value_stated

CODE = 'def loadFromCheckpoint(ckpt_path):\n    model = ResNet50(pretrained=True)  # pre-trained, lr=1e-3\n'
REQUIREMENTS = ["Step 1: Train SAC on Sparse Hopper", "Step 2: Train SAC on Hopper", "Plot the curves"]


def test_kept_terms_are_the_terms_worked_out_again() -> None:
    for text in (CODE, "Hopper-v4 and HalfCheetah", "0.001 1e-3 007"):
        for compounds in (True, False):
            assert terms(text, compounds=compounds) == code_terms._terms(text, compounds)
            assert terms(text, compounds=compounds) == terms(text, compounds=compounds)  # from memory this time
    assert "resnet" in terms(CODE) and "resnet" not in terms(CODE, compounds=False)
    assert {"load", "checkpoint", "0.001"} <= term_set(CODE)


def test_a_caller_that_changes_its_terms_does_not_change_the_kept_ones() -> None:
    first = terms(CODE)
    first.append("extra")
    assert "extra" not in terms(CODE)
    path = path_terms("src/train_model.py")  # appends the extension to a list `terms` gave it
    assert path == path_terms("src/train_model.py") and path.count("py") == 1


def test_a_text_too_long_to_keep_gets_the_same_terms() -> None:
    long_text = CODE * (MEMO_MAX_CHARS // len(CODE) + 1)
    assert len(long_text) > MEMO_MAX_CHARS
    assert terms(long_text) == code_terms._terms(long_text, True)
    assert evidence_terms([long_text]) == evidence_terms([CODE])  # the same words, repeated


def test_evidence_terms_of_many_texts_are_the_union_of_each() -> None:
    texts = [CODE, "src/models/sparse_hopper.py", "HalfCheetah-v4 environment"]
    together = evidence_terms(texts)
    assert together.stems == frozenset().union(*(_text_terms(t)[0] for t in texts))
    assert together.words == frozenset().union(*(_text_terms(t)[1] for t in texts))
    assert together.has("halfcheetahv4") and together.has("spars") and together.has("hopper")
    assert evidence_terms([]).stems == frozenset()


def test_distinguishing_terms_of_one_list_are_worked_out_once_and_handed_out_as_new_lists() -> None:
    first = distinguishing_terms(REQUIREMENTS)
    first.pop()
    again = distinguishing_terms(tuple(REQUIREMENTS))
    assert len(again) == 3 and again[0].terms == {"spars"} and again[2].terms == frozenset()
    assert distinguishing_terms(REQUIREMENTS, min_similarity=0.99)[0].terms == frozenset()


def test_value_stated_reads_tokens_case_insensitively() -> None:
    assert value_stated("learning rate: 1e-3", "We used LR 1e-3 and Adam.")
    assert not value_stated("learning rate: 1e-4", "We used LR 1e-3 and Adam.")
    assert not value_stated("name: ", "anything")
