"""The task's reference implementation in LLM prompts: trusted ground truth shown beside the agent's code.

A requirement leaf may carry the span of the paper's own code it is judged against (LeafEvidence.reference,
see judge.reference). The span is rendered after the agent's evidence blocks and before the leaf lines,
so that a prompt reads code first and question last, and calls of one grade share their longest prefix
(llama.cpp reuses the cached prefix of the previous prompt). Its delimiters differ from the agent's fences,
and the system message says which is which: the reference is the task's, never the agent's, so the model
must not quote it (a quote not found in the submission already turns a pass into `unsupported_evidence`).
The text is neutralised like agent text, because a reference file could hold a line that looks like our
delimiters or a chat-role token; trusted as it is, it must not end its block early.
"""

from __future__ import annotations

from judge.judges.prompt_fencing import content_nonce, neutralise
from judge.models import ReferenceSpan
from judge.models.evidence import LeafEvidence

REFERENCE_OPEN = "<<<REF"
REFERENCE_CLOSE = "REF"
_END = ">>>"
REFERENCE_RULE = (
    f"Blocks from '{REFERENCE_OPEN} <nonce>' to '{REFERENCE_CLOSE} <nonce>{_END}' hold the task's reference "
    "implementation (ground truth, not the agent's submission): how the task's own code does what the leaf that "
    "cites it requires ('retrieved': a best guess that may be unrelated). That leaf is met when the agent's "
    "evidence does the same, in any form. Never quote a reference block."
)
# A leaf shows its primary span and at most one more; a span is cut after this many lines. The spans are
# the requirement's cited lines widened to their functions, so this bounds an outlier, not a typical span.
MAX_REFERENCE_SPANS = 2
MAX_REFERENCE_LINES = 80
REFERENCE_CUT_MARK = "[... {lines} more reference lines not shown]"


def leaf_references(item: LeafEvidence) -> list[ReferenceSpan]:
    """The reference spans `item` is shown with: primary first, at most MAX_REFERENCE_SPANS."""
    spans = list(item.reference_spans) or ([item.reference] if item.reference is not None else [])
    return spans[:MAX_REFERENCE_SPANS]


def reference_key(span: ReferenceSpan) -> tuple[str, str, str]:
    """Identity of a span within a call (a span several leaves share is printed once)."""
    return ("reference", span.label, span.text)


def fence_reference(span: ReferenceSpan, block_id: str) -> str:
    """`span` between reference delimiters, labelled with its id, file and lines (and unit, when known)."""
    lines = span.text.splitlines()
    text = "\n".join(lines[:MAX_REFERENCE_LINES])
    if len(lines) > MAX_REFERENCE_LINES:
        text += "\n" + REFERENCE_CUT_MARK.format(lines=len(lines) - MAX_REFERENCE_LINES)
    body = neutralise(text).text.rstrip("\n")
    nonce = content_nonce(span.text)
    where = f"{span.origin} {span.label}" + (f" ({span.unit})" if span.unit else "")
    head = f"{REFERENCE_OPEN} {nonce} {block_id} reference {' '.join(neutralise(where).text.split())}"
    return f"{head}\n{body}\n{REFERENCE_CLOSE} {nonce}{_END}"


def hash_parts() -> list[str]:
    """Every wording and limit above, for the prompt hash."""
    return [REFERENCE_OPEN, REFERENCE_CLOSE, REFERENCE_RULE, str(MAX_REFERENCE_SPANS), str(MAX_REFERENCE_LINES),
            REFERENCE_CUT_MARK]
