"""The claim-vs-diff check's signals: what a claim asserts, held against the side of the diff it puts it on.

Hand-written diffs (not CRScore rows); each test pairs a claim that fits the diff with one that does not.
"""

from __future__ import annotations

from typing import Any

import pytest

from judge.checks.claim_vs_diff.evidence import claim_features, diff_lines, ensure_diff_headers, signal_names
from judge.checks.claim_vs_diff.features import subwords
from judge.checks.claim_vs_diff.features_text import claimed_counts, cue_counts, old_new_pairs
from judge.submission.diff import parse_diff

ADD_CALL = """\
@@ -4,2 +4,3 @@ def handle(value):
     data = load(value)
+    result = parse_records(data)
     return data
"""
REMOVE_CALL = """\
@@ -8,3 +8,2 @@ def close(self):
     data = self.data
-    cache.clear_all()
     return data
"""
RENAME = """\
@@ -1,2 +1,2 @@
-def fetch_items(rows):
+def fetch_entries(rows):
     return list(rows)
"""
IMPORTS = """\
@@ -1,2 +1,4 @@
 import os
+
+
 import sys
"""
STILL_THERE = """\
@@ -3,2 +3,3 @@
     'roles/storage.viewer',
-    'roles/logging.writer'
+    'roles/logging.writer',
+    'roles/iam.tokenCreator'
"""


def signals(claim: str, diff: str, path: str = "src/app.py") -> dict[str, Any]:
    lines = diff_lines(parse_diff(ensure_diff_headers(diff, path)))
    facts = claim_features(claim, lines)
    assert set(facts.signals) == set(signal_names())
    assert "signals" not in facts.for_llm()  # the facts say the same in words
    return dict(facts.signals)


def test_adds_x_when_x_is_only_on_removed_lines_is_a_wrong_side() -> None:
    assert signals("A call to `cache.clear_all()` is added.", REMOVE_CALL)["names_wrong_side"] == 1.0
    assert signals("The call to `cache.clear_all()` is removed.", REMOVE_CALL)["names_wrong_side"] == 0.0


def test_removes_x_when_x_is_only_added_is_a_wrong_side() -> None:
    wrong = signals("The call to `parse_records` is removed.", ADD_CALL)
    right = signals("A call to `parse_records` is added.", ADD_CALL)
    assert wrong["names_wrong_side"] == 1.0 and wrong["says_removed"] == 1.0
    assert right["names_wrong_side"] == 0.0 and right["names_added_only"] == 1.0


def test_removes_x_when_x_is_still_on_an_added_line_is_not_a_removal() -> None:
    still = signals("The role 'roles/logging.writer' has been removed from the list.", STILL_THERE)
    assert still["names_both_sides"] == 1.0 and still["names_not_new"] == 1.0
    gone = signals("The call to `cache.clear_all()` is removed.", REMOVE_CALL)
    assert gone["names_not_new"] == 0.0


def test_a_rename_is_supported_only_when_the_old_name_goes_and_the_new_one_comes() -> None:
    right = signals("The function `fetch_items` is renamed to `fetch_entries`.", RENAME)
    reversed_ = signals("The function `fetch_entries` is renamed to `fetch_items`.", RENAME)
    assert (right["pairs"], right["pairs_supported"], right["pairs_reversed"]) == (1.0, 1.0, 0.0)
    assert (reversed_["pairs_supported"], reversed_["pairs_reversed"]) == (0.0, 1.0)


def test_a_rename_to_a_name_already_on_context_lines_is_unsupported() -> None:
    diff = ("@@ -1,2 +1,2 @@\n- * @param httpEntity the body\n+ * @param requestEntity the body\n"
            "  Request(Entity requestEntity) {\n")
    s = signals("The parameter name is changed from 'httpEntity' to 'requestEntity'.", diff)
    assert s["pairs"] == 1.0 and s["pairs_supported"] == 0.0 and s["pairs_unsupported"] == 1.0


def test_counts_are_checked_on_the_side_the_claim_puts_them() -> None:
    assert signals("Two new import statements have been added.", IMPORTS)["counts_mismatch"] == 1.0
    assert signals("Two blank lines have been added.", IMPORTS)["counts_match"] == 1.0
    assert signals("One line of code has been added.", ADD_CALL)["counts_match"] == 1.0
    assert signals("Three lines of code have been added.", ADD_CALL)["counts_mismatch"] == 1.0


def test_a_kind_of_code_missing_on_the_claimed_side_is_counted() -> None:
    assert signals("An import statement has been added.", IMPORTS)["kinds_missing_on_side"] == 1.0
    assert signals("An import statement has been added.", "@@ -1 +1,2 @@\n x = 1\n+import json\n")[
        "kinds_missing_on_side"] == 0.0


def test_names_the_diff_has_nowhere_and_files_it_touches() -> None:
    assert signals("The `frobnicate_all` helper is added.", ADD_CALL)["names_absent"] == 1.0
    assert signals("The file `app.py` gets a new call.", ADD_CALL)["names_absent"] == 0.0


def test_speculation_and_scope_cues_are_counted_by_family() -> None:
    speculative = signals("This change could potentially affect callers elsewhere in the codebase.", ADD_CALL)
    plain = signals("A call to `parse_records` is added.", ADD_CALL)
    assert speculative["cue_speculation"] >= 2 and speculative["cue_scope"] >= 2
    assert speculative["cue_first_sentence"] == 1.0 and plain["cue_first_sentence"] == 0.0
    assert sum(plain[f"cue_{k}"] for k in cue_counts("")) == 0.0


def test_words_of_the_claim_by_side() -> None:
    s = signals("The result of parse records is now stored.", ADD_CALL)
    assert s["words_added_only"] > 0 and s["words_removed"] == 0.0
    assert subwords("getRequestBody parse_records") == {"get", "request", "body", "parse", "records"}


def test_diff_shape() -> None:
    assert signals("x", ADD_CALL)["diff_pure_addition"] == 1.0
    assert signals("x", REMOVE_CALL)["diff_pure_removal"] == 1.0
    assert signals("x", IMPORTS)["diff_blank_only"] == 1.0
    assert signals("x", "@@ -1 +1 @@\n-x = f(a,b)\n+x = f(a, b)\n")["diff_whitespace_only"] == 1.0


@pytest.mark.parametrize(("claim", "pairs"), [
    ("Renamed `a_b` to `c_d`.", [("a_b", "c_d")]),
    ("The timeout changed from 30 to 60.", [("30", "60")]),
    ("It replaces `old_call()` with `new_call()`.", [("old_call", "new_call")]),
    ("`json.loads` is now used instead of `eval`.", [("eval", "json.loads")]),
    ("The value is set to the default.", []),
])
def test_old_new_pairs(claim: str, pairs: list[tuple[str, str]]) -> None:
    assert [(p.old, p.new) for p in old_new_pairs(claim)] == pairs


def test_claimed_counts() -> None:
    counts = claimed_counts("Two new lines and a single import statement were added, plus 3 parameters.")
    assert [(c.count, c.kind) for c in counts] == [(2, "line"), (1, "import"), (3, "parameter")]
