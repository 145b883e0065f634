"""The label vocabulary of claims about a diff (CRScore's), shared by the claim check and the review index.

It lives with the models, under both: the store indexes a leaf's claim label for review without importing
the check that decides it (`judge.checks.claim_vs_diff.check`).
"""

from __future__ import annotations

CLAIM_LABELS: tuple[str, ...] = ("correct", "incorrect", "unverifiable", "incomplete")
"""What a claim is: true from the diff, contradicted by it, not settled by it, or cut off mid-sentence."""
LABEL_FLAG = "label:"
"""Prefix of the leaf flag that records the claim label a judge decided (`label:correct`)."""
