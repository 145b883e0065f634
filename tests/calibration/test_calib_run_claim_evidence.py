"""Claim-vs-diff evidence and the embedded judge's check, on hand-written diffs (not CRScore rows)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from calibration.items import ClaimItem
from calibration.runner import CaseOutcome, CaseRunner, ClaimAdapter
from judge.checks.claim_vs_diff.check import claim_args, claim_label_of
from judge.checks.claim_vs_diff.evidence import (
    alignment_texts,
    claim_features,
    claim_identifiers,
    cut_off_score,
    diff_lines,
    ensure_diff_headers,
    hedging_cues,
    locate,
)
from judge.embeddings.encoder import default_embedder
from judge.embeddings.shortlist import EMBED_ALL_UP_TO
from judge.errors import RubricError
from judge.judges.embedded import EmbeddedJudge
from judge.models import LeafResult
from judge.rubric_loader import load_rubric
from judge.submission.diff import parse_diff

CONFIG_HUNK = """\
@@ -10,3 +10,4 @@ class Settings:
     timeout = 30
-    retries = 3
+    retries = 5
+    use_cache = True
     def load(self):
"""
REMOVAL_DIFF = """\
--- a/src/Loader.java
+++ b/src/Loader.java
@@ -1,3 +1,2 @@ public class Loader {
   private int size;
-  private Cache legacyCache = new Cache();
   public Loader() {}
"""


def lines_of(diff: str) -> Any:
    return diff_lines(parse_diff(ensure_diff_headers(diff, "app/config.py")))


def test_bare_hunks_get_a_synthetic_header_and_full_diffs_stay_as_they_are() -> None:
    wrapped = ensure_diff_headers(CONFIG_HUNK, "app/config.py")
    parsed = parse_diff(wrapped)
    assert wrapped.startswith("--- a/app/config.py\n+++ b/app/config.py\n@@ -10,3")
    assert [h.file_path for h in parsed.hunks] == ["app/config.py"]
    assert parsed.hunks[0].added == ["    retries = 5", "    use_cache = True"]
    assert ensure_diff_headers(REMOVAL_DIFF) == REMOVAL_DIFF
    assert ensure_diff_headers("") == ""


def test_code_names_are_found_in_quotes_cases_dots_and_calls_but_prose_is_not() -> None:
    names = claim_identifiers(
        "The `use_cache` flag is read by parseConfig() and os.path.join, and 'retries' is raised."
    )
    assert names == ["use_cache", "retries", "parseConfig()", "os.path.join"]
    assert claim_identifiers("The default (no modifier) value is kept, e.g. for tests.") == []
    assert claim_identifiers('The quoted "..." and "x" name nothing.') == []


def test_names_are_located_on_added_removed_or_context_lines_or_absent() -> None:
    lines = lines_of(CONFIG_HUNK)
    assert locate("use_cache", lines) == ["added"]
    assert locate("retries", lines) == ["added", "removed"]
    assert locate("Settings", lines) == ["context"]  # the hunk header's section counts as context
    assert locate("self.load()", lines) == ["context"]  # a dotted call is also looked up by its last part
    assert locate("max_workers", lines) == []


def test_change_verbs_that_contradict_the_diff_are_conflicts() -> None:
    config = lines_of(CONFIG_HUNK)
    removal = lines_of(REMOVAL_DIFF)
    said_removed = claim_features("The use_cache attribute has been removed.", config)
    assert said_removed.verbs == ["removed"]
    assert said_removed.conflicts == ["says removed, but the names it mentions are only on added lines"]
    said_added = claim_features("A field legacyCache was added to Loader.", removal)
    assert "says added, but the diff adds no line" in said_added.conflicts
    assert claim_features("The legacyCache field is no longer created.", removal).conflicts == []
    assert claim_features("The retries default changed from 3 to 5.", config).conflicts == []
    reversed_claim = claim_features("The retries default changed from 5 to 3.", config)
    assert reversed_claim.conflicts == ["says from 5 to 3, but the diff goes from 3 to 5"]
    assert said_removed.diff_shows == ["added", "removed", "changed"]


def test_hedging_cues_and_cut_off_claims() -> None:
    assert hedging_cues("This will likely improve speed and may reduce load.") == ["likely", "may"]
    assert hedging_cues("The variable retries is set to 5.") == []
    assert cut_off_score("The value of retries is set to 5.") == 0.0
    assert cut_off_score('He wrote "done."') == 0.0
    assert cut_off_score("This could potentially") == 0.75  # no sentence end, last word not dangling
    assert cut_off_score("The change could potentially affect the") == 1.0
    assert cut_off_score("The index field will now be a two-") == 1.0
    assert cut_off_score("The value is set") == 0.75
    assert cut_off_score("") == 1.0


def test_numbers_of_the_claim_are_checked_against_the_diff() -> None:
    lines = lines_of(CONFIG_HUNK)
    assert claim_features("retries is raised to 5.", lines).numbers == "match"
    assert claim_features("retries is raised to 7.", lines).numbers == "mismatch"
    assert claim_features("retries is raised.", lines).numbers == "claim_has_no_numbers"


def judge_claims(claims: list[str], diff: str, **args: Any) -> list[CaseOutcome]:
    rubric = load_rubric("crscore-claims-v1")
    adapter = ClaimAdapter()
    leaf = adapter.leaf_for(rubric)
    leaf = leaf.model_copy(update={"check": leaf.check.model_copy(update={"args": {**leaf.check.args, **args}})})
    items = [ClaimItem(item_id=f"t:{i}", group_id="t", category="python", language="python", diff=diff, claim=c)
             for i, c in enumerate(claims)]
    runner = CaseRunner(rubric, EmbeddedJudge(), adapter, progress=False)
    outcomes, _ = asyncio.run(runner.run([adapter.to_case(item, leaf) for item in items]))
    return outcomes


def test_the_embedded_check_labels_claims_and_maps_them_like_the_llm_judge() -> None:
    correct, absent, cut, speculative = judge_claims([
        "The retries setting is raised from 3 to 5 and a use_cache flag is added.",
        "The max_workers setting is added to Settings.",
        "The addition of use_cache could potentially affect the",
        "This might potentially make the whole application faster for end users in the future.",
    ], CONFIG_HUNK)
    assert (correct.predicted, correct.result.verdict, correct.result.flags) == ("correct", "pass", ["label:correct"])
    assert correct.result.evidence and correct.result.evidence[0].verified
    assert (absent.predicted, absent.result.verdict) == ("incorrect", "fail")
    assert "max_workers" in absent.result.rationale
    assert (cut.predicted, cut.result.verdict, cut.result.reason_code) == ("incomplete", "unscored", "not_applicable")
    assert cut.result.flags == ["label:incomplete", "incomplete"]
    assert speculative.predicted == "unverifiable"
    assert speculative.result.flags == ["label:unverifiable", "unverifiable"]
    for outcome in (correct, absent, cut, speculative):
        assert outcome.result.confidence is not None and 0.5 <= outcome.result.confidence <= 1.0
        assert outcome.judge_evidence and outcome.judge_evidence[-1].startswith("facts:\n")
        assert "{" not in outcome.judge_evidence[-1]  # facts in words, not a JSON object


def test_thresholds_come_from_the_rubric_args() -> None:
    claims = ["The max_workers setting is added to Settings.",
              "This might potentially make the whole application faster for end users in the future."]
    default = [o.predicted for o in judge_claims(claims, CONFIG_HUNK)]
    relaxed = [o.predicted for o in judge_claims(claims, CONFIG_HUNK, incorrect_at=1.01, hedge_min=99,
                                                  correct_threshold=0.0)]
    assert default == ["incorrect", "unverifiable"]
    assert relaxed == ["correct", "correct"]


def test_long_hunks_are_aligned_by_windows_so_the_claim_finds_its_lines() -> None:
    body = [f" value_{i} = compute_{i}()" for i in range(60)]
    body[44:46] = ["-def parse_header(raw):", "+def parse_header(raw, strict=False):"]
    hunk = "@@ -1,59 +1,59 @@\n" + "\n".join(body) + "\n"
    [outcome] = judge_claims(["parse_header now takes a strict flag that defaults to False."], hunk)
    best = outcome.judge_evidence[0].splitlines()
    assert "+def parse_header(raw, strict=False):" in best
    assert len(best) < 30  # a piece of the 60-line hunk, not all of it
    assert outcome.predicted == "correct"


def test_a_claim_on_a_huge_diff_embeds_a_lexical_shortlist_and_still_finds_its_lines() -> None:
    target = ("@@ -1,2 +1,2 @@ def parse_header\n line = raw.strip()\n-def parse_header(raw):\n"
              "+def parse_header(raw, strict=False):\n")
    noise = "".join(f"--- a/ui/theme_{n}.py\n+++ b/ui/theme_{n}.py\n@@ -1,2 +1,2 @@\n colour_{n} = 1\n"
                    f"-palette_{n} = 'dark'\n+palette_{n} = 'light'\n" for n in range(600))
    diff = ensure_diff_headers(target, "src/parser.py") + noise
    claim = "parse_header now takes a strict flag that defaults to False."
    before = default_embedder().encoded_texts
    [outcome] = judge_claims([claim], diff)
    assert default_embedder().encoded_texts - before <= EMBED_ALL_UP_TO + 1  # the shortlist and the claim
    assert "+def parse_header(raw, strict=False):" in outcome.judge_evidence[0]
    assert outcome.predicted == "correct"
    assert len(alignment_texts([ClaimAdapter().leaf_for(load_rubric("crscore-claims-v1"))],
                               parse_diff(diff))) <= EMBED_ALL_UP_TO + 1


def test_labels_are_read_back_from_either_judges_results() -> None:
    base = {"leaf_id": "claim_vs_diff", "template_id": "claim_vs_diff", "stage": "implementation",
            "title": "t", "judge": "llm"}
    assert claim_label_of(LeafResult(verdict="pass", score=1.0, **base)) == "correct"
    assert claim_label_of(LeafResult(verdict="fail", score=0.0, **base)) == "incorrect"
    unverifiable = LeafResult(verdict="unscored", reason_code="not_applicable", flags=["unverifiable"], **base)
    assert claim_label_of(unverifiable) == "unverifiable"
    assert claim_label_of(LeafResult(verdict="unscored", reason_code="judge_error", **base)) is None
    said_correct = LeafResult(verdict="unscored", reason_code="unsupported_evidence", flags=["model_said:correct"],
                              **base)
    assert claim_label_of(said_correct) is None


def test_bad_threshold_arguments_name_the_field() -> None:
    with pytest.raises(RubricError, match=r"check\.args\.incorrect_at"):
        claim_args({"incorrect_at": "high"})
    with pytest.raises(RubricError, match=r"check\.args\.low_similarity_label"):
        claim_args({"low_similarity_label": "maybe"})
