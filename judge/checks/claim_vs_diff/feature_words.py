"""The claim-vs-diff check's learned features in words (`CLAIM_FEATURE_NAMES`; see judge/checks/feature_words.py).

The signals are those of judge/checks/claim_vs_diff/features.py; "names" are the code names the claim
mentions, "words" its sub-words.
"""

from __future__ import annotations

from judge.checks.claim_vs_diff.features_text import CUE_NAMES
from judge.checks.feature_words import FeatureWords, count, flag, log_count, share

_CUES = {
    "speculation": "speculation cues in the claim (may, could)",
    "inference": "inference cues in the claim (suggests, implies)",
    "effect": "cues about effects the diff cannot show (will affect)",
    "intent": "cues about intent (in order to, so that)",
    "evaluation": "judging cues in the claim (more readable, fixes a bug)",
    "scope": "cues about code outside the diff (callers, elsewhere)",
}

CLAIM_FEATURE_WORDS: dict[str, FeatureWords] = {
    "names_added_only": share("share of the claim's code names only on added lines"),
    "names_removed_only": share("share of the claim's code names only on removed lines"),
    "names_context_only": share("share of the claim's code names only on unchanged lines"),
    "names_both_sides": share("share of the claim's code names on both added and removed lines"),
    "names_absent": share("share of the claim's code names found nowhere in the diff"),
    "names_count": log_count("code names the claim mentions"),
    "says_added": flag("the claim says something was added"),
    "says_removed": flag("the claim says something was removed"),
    "says_changed": flag("the claim says something was changed"),
    "says_renamed": flag("the claim says something was renamed"),
    "says_moved": flag("the claim says something was moved"),
    "verb_added_no_added_lines": flag("the claim says added but the diff adds no line"),
    "verb_removed_no_removed_lines": flag("the claim says removed but the diff removes no line"),
    "verb_changed_one_sided": flag("the claim says changed but the diff only adds or only removes"),
    "names_wrong_side": share("share of the claim's code names on the other side than it says"),
    "names_not_new": share("share of the claim's new code names that were already there"),
    "pairs": count("old and new pairs the claim states (renamed A to B)"),
    "pairs_supported": count("old and new pairs the diff shows"),
    "pairs_reversed": count("old and new pairs the diff shows the other way round"),
    "pairs_unsupported": count("old and new pairs the diff does not show"),
    "counts_match": count("line counts the claim states that the diff matches"),
    "counts_mismatch": count("line counts the claim states that the diff does not match"),
    "kinds_mentioned": count("kinds of code the claim talks about (imports, comments)"),
    "kinds_missing_on_side": count("kinds of code the claim talks about that no changed line is"),
    "kinds_missing_anywhere": count("kinds of code the claim talks about that no line of the diff is"),
    "words": log_count("words of the claim"),
    "words_added": share("share of the claim's words on added lines"),
    "words_removed": share("share of the claim's words on removed lines"),
    "words_added_only": share("share of the claim's words only on added lines"),
    "words_removed_only": share("share of the claim's words only on removed lines"),
    "words_context": share("share of the claim's words on unchanged lines"),
    "words_nowhere": share("share of the claim's words found nowhere in the diff"),
    "diff_added": log_count("lines the diff adds"),
    "diff_removed": log_count("lines the diff removes"),
    "diff_context": log_count("unchanged lines the diff shows"),
    "diff_pure_addition": flag("the diff only adds lines"),
    "diff_pure_removal": flag("the diff only removes lines"),
    "diff_blank_only": flag("the diff changes blank lines only"),
    "diff_whitespace_only": flag("the diff changes whitespace only"),
    **{f"cue_{name}": count(_CUES[name]) for name in CUE_NAMES},
    "cue_first_sentence": flag("the claim's first sentence carries such a cue"),
    "cue_sentence_share": share("share of the claim's sentences with such a cue"),
    "sentences": count("sentences in the claim"),
    "claim_words": log_count("words in the claim"),
    "similarity_best": FeatureWords("similarity of the closest diff lines to the claim"),
    "similarity_mean": FeatureWords("mean similarity of the diff lines shown to the claim"),
    "similarity_spread": FeatureWords("spread of the similarities of the diff lines shown"),
    "cut_off": FeatureWords("how cut off the claim's text looks"),
    "cut_off_strong": flag("the claim stops mid-sentence"),
    "hedges": count("hedging words in the claim"),
    "conflicts": count("conflicts between the claim's verbs and the diff"),
    "numbers_match": flag("the claim's numbers are in the diff"),
    "numbers_mismatch": flag("the claim's numbers are not in the diff"),
    "hunks": log_count("hunks in the diff"),
}
