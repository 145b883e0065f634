"""Versioned prompt templates of the LLM judge and the batching of leaves into calls.

A call carries leaves of one stage. The system message (trusted) states the rules and each
rubric criterion once, with its labels or anchored levels; the user message shows the
agent's evidence, each distinct snippet once, fenced (see prompt_fencing), then the task's reference
spans the leaves are judged against, if any (see prompt_reference), then one line per leaf: its
ground-truth target, the ids of its evidence and reference blocks and mechanical facts. Code comes
first and questions last, so calls of one grade share their longest prefix in a server's prompt cache.
A leaf sees only the evidence aligned to it; a hunk several requirements share is printed
once and referred to by id. Leaves are packed greedily into as few calls as fit the
token budget; the whole diff is never pasted, and nothing is truncated unless one leaf's
own evidence exceeds the budget on its own (then its weakest snippets are dropped, then
its one remaining snippet is cut by lines, and the leaf is flagged "evidence_cut").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from judge.checks.registry import CHECKS
from judge.judges.llm_schemas import SCHEMA_VERSION, Citations, labels_for
from judge.judges.prompt_fencing import FENCE_RULE, fence, looks_like_injection, neutralise
from judge.judges.prompt_reference import REFERENCE_RULE, fence_reference, leaf_references, reference_key
from judge.judges.prompt_reference import hash_parts as reference_hash_parts
from judge.models import Leaf, Stage, content_hash
from judge.models.evidence import AlignedSnippet, CheckFacts, LeafEvidence

PROMPT_VERSION = "llm-judge-v3"

# Checks the LLM judge decides; every other check is deterministic and goes to the fallback.


def llm_decides(leaf: Leaf) -> bool:
    """Whether the LLM judge decides `leaf` (its check says so); other leaves stay deterministic."""
    return leaf.check.name in CHECKS and CHECKS.get(leaf.check.name).llm_decidable


def quote_required(leaf: Leaf) -> bool:
    """Whether a positive LLM verdict on `leaf` must cite a quote."""
    return leaf.check.name in CHECKS and CHECKS.get(leaf.check.name).quote_required


QUOTE_RULE = "Copy quotes verbatim from that evidence; a verdict above the lowest needs a quote."
SYSTEM_TEMPLATE = """\
You grade an AI research agent's {stage} against ground truth, leaf by leaf.
{fence_rule}
Judge each leaf only from its own evidence blocks and facts. Copy quotes verbatim from that evidence; \
a verdict above the lowest needs a quote. No evidence: the lowest verdict.
Call {tool} with one entry per leaf id.
Criteria:
{criteria}"""
# Citing blocks (llm_schemas.Citations): the same rules, the quote rule replaced by this one.
CITE_RULE = "Cite the ids of the evidence blocks that show it; a verdict above the lowest needs a cited block."
SYSTEM_TEMPLATES: dict[Citations, str] = {
    "quotes": SYSTEM_TEMPLATE,
    "blocks": SYSTEM_TEMPLATE.replace(QUOTE_RULE, CITE_RULE),
}
CRITERION_TEMPLATE = "{cid}: {criterion}\n  {answers}"
BINARY_ANSWERS = "verdict: pass = the criterion is met; fail = it is not"
LEVEL_TEMPLATE = "{label} ({score:g}): {anchor}"
USER_TEMPLATE = "Evidence:\n{evidence}\nLeaves:\n{leaves}"
USER_REFERENCE_TEMPLATE = "Evidence:\n{evidence}\nReference implementation:\n{reference}\nLeaves:\n{leaves}"
LEAF_TEMPLATE = "{alias} [{cid}] target: {target}{meta} | evidence: {refs}{reference}{facts}"
LEAF_REFERENCE = " | reference: {ids}"
NO_EVIDENCE = "(no evidence blocks)"
CUT_MARK = "[... {lines} more lines not shown]"
TOOL_NAME = "GradeLeaves"
MAX_FACTS_CHARS = 400
MESSAGE_OVERHEAD_TOKENS = 8


def prompt_hash(citations: Citations = "quotes") -> str:
    """Hash of every template and rule the prompts are built from (changes with any wording).

    Citing quotes hashes the parts it always did (grades fingerprinted before citing blocks existed stay
    found); citing blocks adds its rule.
    """
    parts = [
        PROMPT_VERSION,
        SCHEMA_VERSION,
        SYSTEM_TEMPLATE,
        CRITERION_TEMPLATE,
        BINARY_ANSWERS,
        *(check.llm_answers for check in CHECKS if check.llm_answers),
        LEVEL_TEMPLATE,
        USER_TEMPLATE,
        USER_REFERENCE_TEMPLATE,
        LEAF_TEMPLATE,
        LEAF_REFERENCE,
        *reference_hash_parts(),
        NO_EVIDENCE,
        CUT_MARK,
        FENCE_RULE,
        str(MAX_FACTS_CHARS),
    ]
    if citations != "quotes":
        parts += [f"citations={citations}", CITE_RULE]
    return content_hash(parts)


@dataclass
class CallPlan:
    """One LLM call: the leaves it grades and the exact messages it sends."""

    stage: Stage
    evidence: list[LeafEvidence]
    aliases: dict[str, str]  # alias shown to the model ("L1") -> leaf id
    labels: dict[str, tuple[str, ...]]  # alias -> labels that leaf may take
    messages: list[dict[str, str]]
    estimated_tokens: int
    leaf_flags: dict[str, list[str]] = field(default_factory=dict)  # leaf id -> flags from rendering
    blocks: dict[str, tuple[str, ...]] = field(default_factory=dict)  # alias -> ids of that leaf's evidence blocks
    block_snippets: dict[str, AlignedSnippet] = field(default_factory=dict)  # block id ("E1") -> what it shows


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _render_facts(facts: CheckFacts) -> str:
    # Only what the check declares shown to an LLM (`for_llm`): the rest feeds the embedded decision.
    # Empty findings say nothing, so they are not worth the model's tokens either.
    shown = {k: v for k, v in facts.for_llm().items() if v not in (None, "", [], {})}
    if not shown:
        return ""
    # Facts are mechanical findings but may carry agent strings (a found number's sentence),
    # so they are neutralised too; capped because they are hints, not evidence.
    text = neutralise(json.dumps(shown, sort_keys=True, separators=(",", ":"))).text
    if len(text) > MAX_FACTS_CHARS:
        text = text[: MAX_FACTS_CHARS - 1] + "…"
    return f" | facts: {text}"


def _criterion_block(cid: str, leaf: Leaf) -> str:
    own = CHECKS.get(leaf.check.name).llm_answers if leaf.check.name in CHECKS else None
    if own:
        answers = own
    elif leaf.kind == "ordinal":
        levels = "".join(
            "\n    " + LEVEL_TEMPLATE.format(label=lv.label, score=lv.score, anchor=_one_line(lv.anchor))
            for lv in leaf.levels
        )
        answers = f"verdict = one level label:{levels}"
    else:
        answers = BINARY_ANSWERS
    return CRITERION_TEMPLATE.format(cid=cid, criterion=_one_line(leaf.criterion), answers=answers)


def _criterion_key(leaf: Leaf) -> str:
    # Leaves of one template share a criterion; the key also covers levels so two
    # templates with the same wording but different anchors stay apart.
    return content_hash([leaf.criterion, leaf.kind, leaf.check.name, [lv.model_dump() for lv in leaf.levels]])


def _fence_meta(snippet: AlignedSnippet) -> str:
    # A diff location is "path @@ header"; when the hunk text starts with that header,
    # the path alone says it (the header would be printed twice).
    location = snippet.location or ""
    path, sep, header = location.partition(" @@")
    if sep and snippet.text.lstrip().startswith(("@@" + header).strip()):
        return path
    return location


def _snippet_key(snippet: AlignedSnippet) -> tuple[str, str, str]:
    return (snippet.source, snippet.location or "", snippet.text)


# The tally key of what a call with any reference block pays once: the reference rule and section title.
_REFERENCE_SHARED = ("reference-rule", "", "")


def _leaf_reference(ids: list[str]) -> str:
    return LEAF_REFERENCE.format(ids=", ".join(ids)) if ids else ""


class _Parts(NamedTuple):
    """A call's rendered pieces: the system message, evidence and reference blocks, leaf lines, and which
    blocks each leaf alias was shown (with what each block id shows)."""

    system: str
    blocks: list[str]
    references: list[str]
    lines: list[str]
    leaf_blocks: dict[str, tuple[str, ...]]
    snippets: dict[str, AlignedSnippet]


@dataclass
class _ItemCost:
    criterion_key: str
    criterion_tokens: int
    block_tokens: dict[tuple[str, str, str], int]
    line_tokens: int


@dataclass
class _Tally:
    """Estimated tokens of a growing call; a criterion or evidence block several leaves share counts once."""

    tokens: int = 0
    criteria: set[str] = field(default_factory=set)
    blocks: set[tuple[str, str, str]] = field(default_factory=set)

    def added_by(self, cost: _ItemCost) -> int:
        extra = cost.line_tokens + (0 if cost.criterion_key in self.criteria else cost.criterion_tokens)
        return extra + sum(n for key, n in cost.block_tokens.items() if key not in self.blocks)

    def add(self, cost: _ItemCost) -> None:
        self.tokens += self.added_by(cost)
        self.criteria.add(cost.criterion_key)
        self.blocks.update(cost.block_tokens)


class PromptBuilder:
    """Renders leaves into call plans within a token budget.

    Args:
        count_tokens: Counts the tokens of a piece of text for the judged model.
        token_budget: Prompt tokens (messages, estimated as the sum of their parts) one call may use.
        citations: How the answers cite evidence ("quotes" or "blocks"), which sets the system message's rule.
    """

    def __init__(self, count_tokens: Callable[[str], int], token_budget: int, citations: Citations = "quotes") -> None:
        if token_budget < 200:
            raise ValueError("token_budget must be at least 200 prompt tokens")
        self._system_template = SYSTEM_TEMPLATES[citations]
        self._count_raw = count_tokens
        self._budget = token_budget
        self._counts: dict[str, int] = {}
        self._fenced: dict[tuple[str, str, str, str], str] = {}
        self._costs: dict[int, tuple[LeafEvidence, _ItemCost]] = {}
        self._criterion_keys: dict[int, tuple[Leaf, str]] = {}
        self._base: int | None = None

    def _count(self, text: str) -> int:
        if text not in self._counts:
            self._counts[text] = self._count_raw(text)
        return self._counts[text]

    def plan(self, evidence: Sequence[LeafEvidence]) -> list[CallPlan]:
        """Order leaves by stage (first-seen order) and pack them into as few calls as fit the budget.

        Stages share a call when they fit together (one system message instead of one per stage,
        as EXP-Bench judges design and conclusion together); a large stage gets calls of its own.
        """
        stages: dict[str, list[LeafEvidence]] = {}
        for item in evidence:
            stages.setdefault(item.leaf.stage, []).append(item)
        plans: list[CallPlan] = []
        cut: set[str] = set()
        batch: list[LeafEvidence] = []
        tally = _Tally(self._base_tokens())
        for item in (item for group in stages.values() for item in group):
            fitted = self._fit_alone(item)
            if fitted is not item:
                cut.add(item.leaf.id)
            cost = self._item_cost(fitted)
            if batch and tally.tokens + tally.added_by(cost) > self._budget:
                plans.append(self._render(batch, cut, tally.tokens))
                batch, tally = [], _Tally(self._base_tokens())
            tally.add(cost)
            batch.append(fitted)
        if batch:
            plans.append(self._render(batch, cut, tally.tokens))
        return plans

    def _fit_alone(self, item: LeafEvidence) -> LeafEvidence:
        """`item` with its weakest snippets dropped (then its last one cut) if alone it exceeds the budget."""
        if self._alone(item) <= self._budget:
            return item
        snippets = list(item.snippets)
        while len(snippets) > 1 and self._alone(item.model_copy(update={"snippets": snippets})) > self._budget:
            snippets.pop()
        trimmed = item.model_copy(update={"snippets": snippets})
        if snippets and self._alone(trimmed) > self._budget:
            lines = snippets[0].text.splitlines()
            keep = len(lines)
            while keep > 1:
                keep = max(1, int(keep * 0.8))
                cut_text = "\n".join(lines[:keep]) + "\n" + CUT_MARK.format(lines=len(lines) - keep)
                cut = snippets[0].model_copy(update={"text": cut_text})
                trimmed = item.model_copy(update={"snippets": [cut]})
                if self._alone(trimmed) <= self._budget:
                    break
        return trimmed

    def _base_tokens(self) -> int:
        """Tokens of a call before any leaf: the rules, the message overheads and the section titles."""
        if self._base is None:
            system = self._system_template.format(stage="submission", fence_rule=FENCE_RULE, tool=TOOL_NAME,
                                                  criteria="")
            self._base = self._count(system) + 2 * MESSAGE_OVERHEAD_TOKENS + self._count("Evidence:\nLeaves:\n")
        return self._base

    def _criterion_key(self, leaf: Leaf) -> str:
        # Asked for every leaf while packing and again while rendering; a content hash of its levels each time.
        known = self._criterion_keys.get(id(leaf))
        if known is not None and known[0] is leaf:
            return known[1]
        key = _criterion_key(leaf)
        self._criterion_keys[id(leaf)] = (leaf, key)  # the leaf is kept, so its id is not reused
        return key

    def _item_cost(self, item: LeafEvidence) -> _ItemCost:
        """What one leaf adds to a call, its ids rendered as placeholders (a token either way)."""
        known = self._costs.get(id(item))
        if known is not None and known[0] is item:
            return known[1]
        leaf = item.leaf
        blocks = {_snippet_key(s): self._count(self._fence(s, "E0")) for s in item.snippets}
        refs = ", ".join("E0" for _ in blocks) or "none"
        references = leaf_references(item)
        for span in references:
            blocks[reference_key(span)] = self._count(fence_reference(span, "R0"))
        if references:  # the rule and the section title: once per call, like a shared block
            blocks[_REFERENCE_SHARED] = self._count(f"{REFERENCE_RULE}\nReference implementation:\n")
        line = LEAF_TEMPLATE.format(alias="L0", cid="C0", target=json.dumps(_one_line(leaf.target), ensure_ascii=False),
                                    meta="", refs=refs, reference=_leaf_reference(["R0"] * len(references)),
                                    facts=_render_facts(item.facts))
        cost = _ItemCost(self._criterion_key(leaf), self._count(_criterion_block("C0", leaf)), blocks,
                         self._count(line))
        self._costs[id(item)] = (item, cost)  # the item is kept, so its id is not reused
        return cost

    def _alone(self, item: LeafEvidence) -> int:
        return self._base_tokens() + _Tally().added_by(self._item_cost(item))

    def _parts(self, batch: Sequence[LeafEvidence]) -> _Parts:
        criteria: dict[str, str] = {}
        blocks: dict[tuple[str, str, str], str] = {}
        block_ids: dict[tuple[str, str, str], str] = {}
        reference_blocks: dict[tuple[str, str, str], str] = {}
        reference_ids: dict[tuple[str, str, str], str] = {}
        lines: list[str] = []
        leaf_blocks: dict[str, tuple[str, ...]] = {}
        for index, item in enumerate(batch, start=1):
            leaf = item.leaf
            ckey = self._criterion_key(leaf)
            if ckey not in criteria:
                criteria[ckey] = _criterion_block(f"C{len(criteria) + 1}", leaf)
            cid = criteria[ckey].split(":", 1)[0]
            refs: list[str] = []
            for snippet in item.snippets:
                key = _snippet_key(snippet)
                if key not in block_ids:
                    block_ids[key] = f"E{len(block_ids) + 1}"
                    blocks[key] = self._fence(snippet, block_ids[key])
                if block_ids[key] not in refs:
                    refs.append(block_ids[key])
            leaf_blocks[f"L{index}"] = tuple(refs)
            shown: list[str] = []
            for span in leaf_references(item):
                key = reference_key(span)
                if key not in reference_ids:
                    reference_ids[key] = f"R{len(reference_ids) + 1}"
                    reference_blocks[key] = fence_reference(span, reference_ids[key])
                if reference_ids[key] not in shown:
                    shown.append(reference_ids[key])
            role = leaf.target_meta.get("role")
            meta = f" (role: {role})" if role and str(role) not in leaf.target else ""
            lines.append(
                LEAF_TEMPLATE.format(
                    alias=f"L{index}",
                    cid=cid,
                    target=json.dumps(_one_line(leaf.target), ensure_ascii=False),
                    meta=meta,
                    refs=", ".join(refs) if refs else "none",
                    reference=_leaf_reference(shown),
                    facts=_render_facts(item.facts),
                )
            )
        stage = " and ".join(dict.fromkeys(item.leaf.stage for item in batch)) if batch else "submission"
        rules = f"{FENCE_RULE}\n{REFERENCE_RULE}" if reference_blocks else FENCE_RULE
        system = self._system_template.format(
            stage=stage, fence_rule=rules, tool=TOOL_NAME, criteria="\n".join(criteria.values())
        )
        snippets = {block_ids[_snippet_key(s)]: s for item in batch for s in item.snippets}
        return _Parts(system, list(blocks.values()), list(reference_blocks.values()), lines, leaf_blocks, snippets)

    def _fence(self, snippet: AlignedSnippet, block_id: str) -> str:
        # Estimating re-renders a growing batch; fencing (neutralise + hash) is memoised.
        key = (*_snippet_key(snippet), block_id)
        if key not in self._fenced:
            self._fenced[key] = fence(snippet.text, label=f"{block_id} {snippet.source}", meta=_fence_meta(snippet))
        return self._fenced[key]

    def _render(self, batch: list[LeafEvidence], cut: set[str], estimated_tokens: int) -> CallPlan:
        system, blocks, references, lines, leaf_blocks, snippets = self._parts(batch)
        evidence = "\n".join(blocks) if blocks else NO_EVIDENCE
        if references:  # the agent's code, then the reference, then the questions (see the module docstring)
            user = USER_REFERENCE_TEMPLATE.format(evidence=evidence, reference="\n".join(references),
                                                  leaves="\n".join(lines))
        else:
            user = USER_TEMPLATE.format(evidence=evidence, leaves="\n".join(lines))
        aliases = {f"L{i}": item.leaf.id for i, item in enumerate(batch, start=1)}
        labels = {f"L{i}": labels_for(item.leaf) for i, item in enumerate(batch, start=1)}
        flags: dict[str, list[str]] = {}
        for item in batch:
            leaf_flags: list[str] = []
            if item.leaf.id in cut:
                leaf_flags.append("evidence_cut")
            if any(looks_like_injection(s.text) for s in item.snippets):
                leaf_flags.append("injection_suspected")
            if any(neutralise(s.text).changed for s in item.snippets):
                leaf_flags.append("evidence_neutralised")
            flags[item.leaf.id] = leaf_flags
        return CallPlan(
            stage=batch[0].leaf.stage,
            evidence=batch,
            aliases=aliases,
            labels=labels,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            estimated_tokens=estimated_tokens,
            leaf_flags=flags,
            blocks=leaf_blocks,
            block_snippets=snippets,
        )
