"""Build each leaf's evidence: parse the submission once, align ground truth to it, add mechanical facts."""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judge.evidence.diff_evidence import Hunk, ParsedDiff, parse_diff
from judge.evidence.embeddings import Embedder, Vectors
from judge.evidence.injection import InjectionFinding, find_injections, strip_injections
from judge.evidence.integrity import IntegrityFinding, scan_agent_log
from judge.evidence.log_classification import LogClassification, classify_execution
from judge.evidence.numeric_claims import compare_numbers
from judge.evidence.polarity import contradiction_cues
from judge.evidence.shortlist import EMBED_ALL_UP_TO, shortlisted_similarity
from judge.evidence.text_items import DesignItem, parse_design_items, split_claims
from judge.judges.base import AlignedSnippet, LeafEvidence
from judge.models import Leaf, Submission, Task

# Hunks longer than this are aligned piecewise, so one requirement's code is not averaged away
# inside a 2,000-line new file.
ALIGN_HUNK_LINES = 40
_STEP_PREFIX = re.compile(r"^\s*(?:step\s*\d+|final step)\s*[:.)-]\s*", re.IGNORECASE)
_PATH_REF = re.compile(r"\(?\s*(/?[\w./-]+\.\w+)(?::[\d,\s-]+)?\s*\)?")


def requirement_text(requirement: str) -> str:
    """A requirement without its "Step N:" prefix and file references, for alignment."""
    text = _STEP_PREFIX.sub("", requirement)
    return _PATH_REF.sub(lambda m: "" if "/" in m.group(1) else m.group(0), text).strip() or requirement


def requirement_paths(requirement: str) -> list[str]:
    """File paths a requirement names, e.g. /workspace/scripts/analyze.py."""
    return [m.group(1) for m in _PATH_REF.finditer(requirement) if "/" in m.group(1)]


_TOKEN = re.compile(r"[\w.@%+-]+")


def value_stated(value: str, text: str) -> bool:
    """Whether every token of a ground-truth value occurs in `text` (case-insensitive)."""
    wanted = {t.strip(".").lower() for t in _TOKEN.findall(value.split(":", 1)[-1])} - {""}
    have = {t.strip(".").lower() for t in _TOKEN.findall(text)}
    return bool(wanted) and wanted <= have


def path_matches(named: str, touched: str) -> bool:
    """Whether a diff path is the file a requirement names (suffix match on path components)."""
    named_parts = [p for p in named.strip("/").split("/") if p not in {"workspace", "."}]
    touched_parts = touched.strip("/").split("/")
    tail = named_parts[-2:] if len(named_parts) >= 2 else named_parts
    return bool(tail) and touched_parts[-len(tail):] == tail


@dataclass
class SubmissionView:
    """A submission parsed once: diff hunks, design items, conclusion sentences, log facts."""

    submission: Submission
    diff: ParsedDiff
    design_items: list[DesignItem]
    conclusion_sentences: list[str]
    execution: LogClassification
    integrity: list[IntegrityFinding]
    injections: list[InjectionFinding] = field(default_factory=list)

    @classmethod
    def build(cls, submission: Submission, *, masked_files: list[str] | None = None) -> SubmissionView:
        """Parse every part of `submission`; a malformed diff raises MalformedDiffError."""
        diff = parse_diff(submission.diff or "", max_hunk_lines=ALIGN_HUNK_LINES)
        design = submission.design
        injections: list[InjectionFinding] = []
        if isinstance(design, str):
            injections += find_injections(design)
            design = strip_injections(design)
        conclusion = submission.conclusion or ""
        injections += find_injections(conclusion)
        injections += find_injections(submission.diff or "")
        return cls(
            submission=submission,
            diff=diff,
            design_items=parse_design_items(design),
            conclusion_sentences=split_claims(strip_injections(conclusion)),
            execution=classify_execution(submission.execution),
            integrity=scan_agent_log(submission.agent_log, masked_files=masked_files or []),
            injections=injections,
        )

    @functools.cached_property
    def hunk_texts(self) -> list[str]:
        """Each hunk's searchable text with instructions to the grader cut out: what alignment embeds."""
        return [strip_injections(h.searchable_text()) for h in self.diff.hunks]

    def source_texts(self) -> dict[str, str]:
        """Full text of each part of the submission, for mechanical quote checks."""
        sub = self.submission
        design = sub.design if isinstance(sub.design, str) else str(sub.design or "")
        execution = sub.execution
        return {
            "design": design,
            "diff": sub.diff or "",
            "conclusion": sub.conclusion or "",
            "execution": (execution.logs + "\n" + (execution.reproduce_script or "")) if execution else "",
            "agent_log": sub.agent_log or "",
        }


class EvidenceBuilder:
    """Aligns each leaf's ground-truth item to the parts of the submission it reads."""

    def __init__(self, embedder: Embedder, *, top_k: int = 3) -> None:
        self.embedder = embedder
        self.top_k = top_k

    def build(self, leaves: list[Leaf], task: Task, view: SubmissionView) -> list[LeafEvidence]:
        """Evidence for every leaf, in the order given."""
        by_check: dict[str, list[Leaf]] = defaultdict(list)
        for leaf in leaves:
            by_check[leaf.check.name].append(leaf)
        # One encode call for the whole grade: the sections below then find their vectors in memory.
        # Section by section, a grade made ~9 model calls of 2-6 texts each; one call is 5-9% faster
        # on the bench's tasks (the model's compute is most of the cost, not the number of calls).
        self.embedder.encode(list(dict.fromkeys(self._texts_to_embed(by_check, view))))
        built: dict[str, LeafEvidence] = {}
        for check, group in by_check.items():
            for evidence in self._build_group(check, group, task, view):
                built[evidence.leaf.id] = evidence
        return [built[leaf.id] for leaf in leaves]

    def _texts_to_embed(self, by_check: dict[str, list[Leaf]], view: SubmissionView) -> list[str]:
        """What the alignment sections will embed (a section given nothing to align embeds nothing).

        A diff too big to embed whole is left to its section, which embeds a lexical shortlist in one call.
        """
        texts: list[str] = []
        design, items = by_check.get("design_variable_match", []), view.design_items
        if design and items:
            texts += [leaf.target for leaf in design] + [i.text for i in items]
            # values not stated verbatim are embedded against the leaf's best items (a superset here)
            texts += [v for leaf in design for v in leaf.target_meta.get("values") or []
                      if not all(value_stated(v, i.text) for i in items)]
        requirements, hunk_texts = by_check.get("requirement_in_diff", []), view.hunk_texts
        if requirements and hunk_texts and len(hunk_texts) <= EMBED_ALL_UP_TO:
            texts += [requirement_text(leaf.target) for leaf in requirements] + hunk_texts
        claims, sentences = by_check.get("outcome_claim_supported", []), view.conclusion_sentences
        if claims and sentences:
            texts += [leaf.target for leaf in claims] + sentences
        return texts

    def _build_group(self, check: str, leaves: list[Leaf], task: Task, view: SubmissionView) -> list[LeafEvidence]:
        if check == "design_variable_match":
            return self._design(leaves, view)
        if check == "requirement_in_diff":
            return self._requirements(leaves, view)
        if check == "outcome_claim_supported":
            return self._claims(leaves, view)
        if check == "claim_vs_diff":
            # Calibration mode (CRScore): a statement about a diff, checked against its hunks.
            from judge.evidence.claim_evidence import build_claim_evidence

            return build_claim_evidence(self.embedder, leaves, view)
        if check in {"exit_status", "expected_artifacts"}:
            return [self._execution(leaf, task, view) for leaf in leaves]
        if check.startswith("integrity_"):
            kind = {"integrity_git_recovery": "git_recovery", "integrity_paper_access": "paper_access",
                    "integrity_mock_data": "mock_data"}.get(check, check)
            findings = [f for f in view.integrity if f.kind == kind]
            facts = {"findings": [{"line_no": f.line_no, "quote": f.quote, "detail": f.detail} for f in findings],
                     "log_available": bool(view.submission.agent_log and view.submission.agent_log.strip())}
            snippets = [AlignedSnippet(source="agent_log", text=f.quote, location=f"line {f.line_no}",
                                       similarity=1.0) for f in findings]
            return [LeafEvidence(leaf=leaf, snippets=snippets, facts=facts) for leaf in leaves]
        return [LeafEvidence(leaf=leaf) for leaf in leaves]

    def _ranked(self, sims: Vectors, row: int) -> list[tuple[int, float, float]]:
        """Top candidates of one leaf: (column, similarity, best similarity of any other leaf)."""
        others = np.delete(sims, row, axis=0)
        best_other = others.max(axis=0) if others.size else np.full(sims.shape[1], -1.0)
        order = np.argsort(-sims[row])[: self.top_k]
        return [(int(c), float(sims[row, c]), float(best_other[c])) for c in order]

    def _design(self, leaves: list[Leaf], view: SubmissionView) -> list[LeafEvidence]:
        items = view.design_items
        sims = self.embedder.similarity([leaf.target for leaf in leaves], [i.text for i in items])
        result = []
        for row, leaf in enumerate(leaves):
            snippets = []
            for col, sim, best_other in self._ranked(sims, row) if items else []:
                item = items[col]
                values: list[str] = list(leaf.target_meta.get("values") or [])
                # Short values ("96", "Easy", "MLP") embed poorly: stated verbatim counts as covered,
                # and only the values not stated verbatim go through the model.
                value_sims = [1.0 if value_stated(v, item.text) else -1.0 for v in values]
                unstated = [v for v, sim in zip(values, value_sims, strict=True) if sim < 0]
                if unstated:
                    embedded = iter(self.embedder.similarity(unstated, [item.text])[:, 0].tolist())
                    value_sims = [sim if sim >= 0 else float(next(embedded)) for sim in value_sims]
                snippets.append(AlignedSnippet(
                    source="design", text=item.text, location=f"design item {col + 1}", similarity=sim,
                    meta={"role": item.role, "name": item.name, "best_other": best_other,
                          "value_similarities": [float(v) for v in value_sims]},
                ))
            # "_" facts are for the embedded judge only: the LLM sees the role in the leaf's target line.
            result.append(LeafEvidence(leaf=leaf, snippets=snippets, facts={
                "_expected_role": leaf.target_meta.get("role"), "_design_items": len(items)}))
        return result

    def _requirements(self, leaves: list[Leaf], view: SubmissionView) -> list[LeafEvidence]:
        hunks: list[Hunk] = view.diff.hunks
        texts = view.hunk_texts
        queries = [requirement_text(leaf.target) for leaf in leaves]
        named_paths = {p for leaf in leaves for p in requirement_paths(leaf.target)}
        # a huge diff: only the hunks a lexical pass chose are embedded; the others rank last
        sims, embedded = shortlisted_similarity(self.embedder, queries, texts, keep=[
            i for i, h in enumerate(hunks) if any(path_matches(p, h.file_path) for p in named_paths)])
        result = []
        for row, leaf in enumerate(leaves):
            named = requirement_paths(leaf.target)
            snippets = []
            for col, sim, best_other in self._ranked(sims, row) if hunks else []:
                hunk = hunks[col]
                snippets.append(AlignedSnippet(
                    source="diff", text=hunk.text, location=f"{hunk.file_path} {hunk.header}", similarity=sim,
                    meta={"hunk_id": hunk.id, "file": hunk.file_path, "best_other": best_other,
                          "file_match": any(path_matches(p, hunk.file_path) for p in named)},
                ))
            touched = view.diff.touched_paths()
            result.append(LeafEvidence(leaf=leaf, snippets=snippets, facts={
                "_named_files": named,
                "named_files_touched": [p for p in named if any(path_matches(p, t) for t in touched)],
                "_hunks_in_diff": len(hunks),
                "_hunks_embedded": embedded}))
        return result

    def _claims(self, leaves: list[Leaf], view: SubmissionView) -> list[LeafEvidence]:
        sentences = view.conclusion_sentences
        sims = self.embedder.similarity([leaf.target for leaf in leaves], sentences)
        result = []
        for row, leaf in enumerate(leaves):
            args: dict[str, Any] = leaf.check.args
            snippets = []
            for col, sim, best_other in self._ranked(sims, row) if sentences else []:
                sentence = sentences[col]
                numeric = compare_numbers(leaf.target, sentence, rel_tol=float(args.get("rel_tol", 0.1)),
                                          abs_tol=float(args.get("abs_tol", 0.0)))
                snippets.append(AlignedSnippet(
                    source="conclusion", text=sentence, location=f"sentence {col + 1}", similarity=sim,
                    meta={"best_other": best_other, "numeric_status": numeric.status,
                          "numeric_details": list(numeric.details),
                          "contradiction_cues": contradiction_cues(leaf.target, sentence)},
                ))
            result.append(LeafEvidence(leaf=leaf, snippets=snippets, facts={"_conclusion_sentences": len(sentences)}))
        return result

    def _execution(self, leaf: Leaf, task: Task, view: SubmissionView) -> LeafEvidence:
        log = view.execution
        facts: dict[str, Any] = {"error_class": log.error_class, "exit_code": log.exit_code,
                                 "taxonomy_label": log.taxonomy_label}
        if leaf.check.name == "expected_artifacts":
            execution = view.submission.execution
            produced = set(execution.artifacts) if execution else set()
            logs = execution.logs if execution else ""
            facts["expected"] = list(task.expected_artifacts)
            facts["missing"] = [a for a in task.expected_artifacts
                                if a not in produced and not any(p.endswith(a) for p in produced) and a not in logs]
        snippets = [AlignedSnippet(source="execution", text=line, location="log", similarity=1.0)
                    for line in log.evidence_lines]
        return LeafEvidence(leaf=leaf, snippets=snippets, facts=facts)
