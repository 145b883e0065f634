"""The copy scan reads tokens a window at a time: copies across window borders, long lines, bounded memory."""

from __future__ import annotations

import tracemalloc

import pytest

import judge.safety.scan_segments as scan_segments
from judge.safety.leak_detection import GroundTruthItem, LeakDetector, LeakFinding, redact

REQUIREMENT = ("For each protein in the test split, generate multiple trajectory rollouts by repeatedly sampling "
               "from the model, each conditioned on the first frame of the reference trajectory")
OUTCOME = ("The Hyena variant reproduces torsional autocorrelation functions across timescales from one hundred "
           "femtoseconds to one hundred picoseconds and tracks the ground truth dynamics closely")
ITEMS = [GroundTruthItem("requirement", 0, REQUIREMENT), GroundTruthItem("expected_outcome", 0, OUTCOME)]
FILLER = "x = compute(alpha, beta)"  # 4 tokens a line, none of them in the ground truth


def _diff(lines: list[str], path: str = "notes.py") -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def _as_tuples(findings: list[LeakFinding]) -> list[tuple[object, ...]]:
    return [(f.item.item_id, f.file, f.line_start, f.line_end, f.char_ranges, f.share_copied, f.copied_tokens,
             f.longest_run, f.span) for f in findings]


def test_a_copy_across_the_border_of_two_windows_is_found_whole() -> None:
    # 12 filler lines are 48 tokens; with windows of 50 tokens the copy (28 tokens, over 3 lines) starts in the
    # first window and ends in the second.
    words = REQUIREMENT.split()
    copy = [" ".join(words[:9]), " ".join(words[9:18]), " ".join(words[18:])]
    diff = _diff([FILLER] * 12 + [f"# {line}" for line in copy] + [FILLER] * 12)
    whole = LeakDetector(ITEMS).scan_diff(diff)
    windowed = LeakDetector(ITEMS, window_tokens=50).scan_diff(diff)
    assert [f.item.item_id for f in whole] == ["requirement.0"]
    assert (whole[0].line_start, whole[0].line_end, whole[0].share_copied) == (13, 15, 1.0)
    assert _as_tuples(windowed) == _as_tuples(whole)
    assert windowed[0].span == "\n".join(copy)


@pytest.mark.parametrize("window_tokens", [1, 2, 7, 13, 64, 100_000])
def test_findings_do_not_depend_on_the_window_size(window_tokens: int) -> None:
    changed = OUTCOME.replace("closely", "well")
    lines = [FILLER] * 5 + [REQUIREMENT] + [FILLER] * 3 + [changed[:60], changed[60:]] + [""] * 2 + [REQUIREMENT]
    diff = _diff(lines) + _diff([FILLER, OUTCOME, FILLER], path="README.md")
    expected = LeakDetector(ITEMS).scan_diff(diff)
    assert len(expected) == 4
    assert _as_tuples(LeakDetector(ITEMS, window_tokens=window_tokens).scan_diff(diff)) == _as_tuples(expected)
    text = "\n".join(lines)
    assert (_as_tuples(LeakDetector(ITEMS, window_tokens=window_tokens).scan_text(text, "conclusion"))
            == _as_tuples(LeakDetector(ITEMS).scan_text(text, "conclusion")))


@pytest.mark.parametrize("piece_chars", [7, 100, 65_536])
def test_a_copy_inside_one_very_long_line_has_its_exact_span(piece_chars: int,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_segments, "_PIECE_CHARS", piece_chars)
    prefix = " ".join([FILLER] * 40) + "; "
    line = prefix + REQUIREMENT + "; " + " ".join([FILLER] * 40)
    diff = _diff([FILLER, line])
    (finding,) = LeakDetector(ITEMS, window_tokens=16).scan_diff(diff)
    start = diff.index(line) + len(prefix)
    assert finding.char_ranges == ((start, start + len(REQUIREMENT)),)
    assert (finding.line_start, finding.span) == (2, REQUIREMENT)


def test_redact_blanks_overlapping_ranges_like_a_per_character_rewrite() -> None:
    diff = _diff([FILLER, REQUIREMENT, OUTCOME, FILLER])
    findings = LeakDetector(ITEMS).scan_diff(diff)
    doubled = [*findings, *findings]  # the same ranges twice: overlapping blanks must not shift the text
    chars = list(diff)
    for lo, hi in (r for f in doubled for r in f.char_ranges):
        chars[lo:hi] = " " * (hi - lo)
    assert redact(diff, doubled, "diff") == "".join(chars)
    assert REQUIREMENT not in redact(diff, findings, "diff") and len(redact(diff, findings, "diff")) == len(diff)


def test_window_size_is_checked_and_not_part_of_the_spec() -> None:
    with pytest.raises(ValueError, match="window_tokens"):
        LeakDetector(ITEMS, window_tokens=0)
    assert LeakDetector(ITEMS, window_tokens=5).spec() == LeakDetector(ITEMS).spec()


def test_scanning_a_big_diff_holds_no_per_token_lists() -> None:
    # ~4 MB, 80,000 lines, 320,000 tokens: a token list and a tuple per token would take ~60 MB.
    diff = _diff([FILLER] * 80_000 + [REQUIREMENT])
    detector = LeakDetector(ITEMS)
    tracemalloc.start()
    try:
        findings = detector.scan_diff(diff)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [f.line_start for f in findings] == [80_001]
    assert peak < 25 * 2**20, f"{peak / 2**20:.0f} MB"
