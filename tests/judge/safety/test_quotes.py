"""Quote checks: whitespace, case, diff markers and markup tolerated; each haystack judged on its own."""

from __future__ import annotations

from judge.safety.quotes import quote_found, quote_in

DIFF = "@@ -1,2 +1,2 @@\n-lr = 0.1\n+lr = 0.01\n+parser.add_argument('--epochs',  type=int)\n"


def test_quotes_match_across_wrapping_case_and_diff_markers() -> None:
    assert quote_in("LR = 0.01", DIFF)
    assert quote_in("parser.add_argument('--epochs', type=int)", DIFF)  # double space collapsed
    assert not quote_in("lr = 0.001", DIFF)
    assert quote_in("lr = 0.1\nlr = 0.01", DIFF, diff=True) and not quote_in("lr = 0.1\nlr = 0.01", DIFF)
    assert not quote_in("   ", DIFF)


def test_rebuilt_quotes_match_segment_by_segment_without_markup() -> None:
    design = "## Variables\n- **learning rate**: 0.1, 0.01\n- batch size: 32"
    assert quote_found("learning rate: 0.1, 0.01", design)
    assert not quote_found("learning rate: 0.5", design)


def test_remembered_haystacks_never_answer_for_another() -> None:
    first, second = "alpha beta gamma " * 1000, "delta epsilon " * 1000
    for _ in range(3):  # the normalised forms are remembered; each question still reads its own text
        assert quote_in("beta gamma", first) and not quote_in("beta gamma", second)
        assert quote_in("delta epsilon", second) and not quote_in("delta epsilon", first)
        assert quote_found("alpha; beta", first) and not quote_found("alpha; beta", second)
