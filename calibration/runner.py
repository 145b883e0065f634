"""Run a judge over labelled items: each item becomes (task, submission, leaf), graded once and cached.

Each case is graded by the same pipeline as every grade the service serves (`judge.grading.grader.Grader`, its
entry points `prepare_many` / `judge_prepared`): ground-truth copy detection, the rubric's gates, the
evidence, the judge; so the agreement measured here is that of the grades `POST /v1/grade` serves, on the
one leaf each label is about. A case whose leaf is one the rubric expands over its task (JudgeEval's leaves
of one repository) is a leaf of that task's grade: the task is prepared once with all its leaves, as
`expjudge grade` prepares it, and each case reads its own leaf. Any other case (a claim about a diff) is
prepared for its one leaf. Either way every case is prepared before the encoder runs once over all their
texts, and a submission's parsed view is shared by the cases of the same content.

An adapter turns a labelled item into a `JudgeCase` and a judge's `LeafResult` back into a label of the
label set. Claims about diffs (CRScore) are the adapter shipped here; any item type that can be turned into a
task, a submission and one leaf can get its own.

Caching, so a rerun costs nothing: results of the deterministic embedded judge are kept in the store by
(item content hash, judge fingerprint digest); LLM calls go through the store's response cache (keyed by the
exact messages, schema and sampling), so a rerun of the LLM judge makes no call. A changed rubric, prompt,
model or sampling setting is a new fingerprint, hence new cache keys.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from calibration.agreement_models import MetricScale
from calibration.cases import CaseAdapter, JudgeCase

__all__ = ["ADAPTERS", "CaseAdapter", "CaseOutcome", "CaseRunner", "ClaimAdapter", "JudgeCase", "RunStats",
           "adapter_for", "single_leaf"]
from calibration.items import CLAIM_CRITERION, ClaimItem, LabelledItem
from calibration.judgeeval import JudgeEvalAdapter
from calibration.labels import Label, LabelKey
from judge.checks.claim_vs_diff.check import CLAIM_CHECK, claim_label_of
from judge.checks.claim_vs_diff.evidence import CLAIM_FEATURES_VERSION, ensure_diff_headers
from judge.embeddings.encoder import Embedder, default_embedder
from judge.errors import InputError, MalformedDiffError, RubricError
from judge.grading.grader import Grader
from judge.grading.prepared import ContentHashes, GradeInput, PreparedGrade
from judge.judges.base import Judge
from judge.judges.embedded import EmbeddedJudge
from judge.judges.response_cache import ResponseCache
from judge.models import JudgeFingerprint, Leaf, LeafResult, Rubric, Submission, Task, content_hash
from judge.models.claim_labels import CLAIM_LABELS
from judge.models.evidence import LeafEvidence
from judge.rubric_loader import expand_rubric

# Part of every result-cache key: bump when what a cached result means changes.
RESULT_CACHE_VERSION = "calibration-result-v2"  # v2: graded by the grading pipeline (gates, copies)
_EXPANSIONS_KEPT = 256  # rubric expansions kept, by task hash
_SYNTHETIC_EXT = {"python": "py", "java": "java", "javascript": "js"}
# Every module an embedded result depends on: the checks, the evidence layer, the reference matching the
# requirement check reads code with, the embedded judge, and the grading pipeline around them.
_DECIDING_PACKAGES = ("judge.checks", "judge.submission", "judge.text", "judge.safety", "judge.embeddings",
                      "judge.reference")
_DECIDING_MODULES = ("judge.judges.embedded", "judge.grading.grader", "judge.safety.ground_truth_leaks")


def single_leaf(rubric: Rubric, check: str, task: Task) -> Leaf:
    """The one leaf of `rubric` whose check is `check`, expanded over `task`.

    Raises:
        RubricError: the rubric has no such leaf, or more than one.
    """
    leaves = [leaf for leaf in expand_rubric(rubric, task) if leaf.check.name == check]
    if len(leaves) != 1:
        found = "no" if not leaves else f"{len(leaves)}"
        raise RubricError(f"has {found} leaf with check {check!r}; calibration needs exactly one",
                          field=f"rubric {rubric.id}")
    return leaves[0]


class ClaimAdapter:
    """Claims about a diff (CRScore): Task(task_id=diff id) + Submission(diff) + the claim_vs_diff leaf."""

    labels: tuple[Label, ...] = CLAIM_LABELS
    scale: MetricScale = "categorical"
    unit: str = "diffs"

    def accepts(self, item: LabelledItem) -> bool:
        """True for ClaimItems."""
        return isinstance(item, ClaimItem)

    def key_of(self, item: LabelledItem) -> LabelKey:
        """(item id, "claim_correctness")."""
        return LabelKey(item.item_id, getattr(item, "criterion", CLAIM_CRITERION))

    def leaf_for(self, rubric: Rubric) -> Leaf:
        """The rubric's claim_vs_diff leaf, expanded over a small task."""
        return single_leaf(rubric, CLAIM_CHECK, Task(task_id="claim"))

    def to_case(self, item: LabelledItem, leaf: Leaf) -> JudgeCase:
        """The case of one claim; a bare hunk gets a synthetic file header so it parses."""
        if not isinstance(item, ClaimItem):
            raise TypeError(f"ClaimAdapter cannot grade {type(item).__name__}")
        path = f"snippet.{_SYNTHETIC_EXT.get(item.language, 'txt')}"
        task = Task(task_id=item.group_id, question="Is this statement about the diff correct?",
                    metadata={"language": item.language})
        submission = Submission(submission_id=item.item_id, task_id=item.group_id,
                                diff=ensure_diff_headers(item.diff, path))
        return JudgeCase(item=item, key=self.key_of(item), task=task, submission=submission,
                         leaf=leaf.model_copy(update={"target": item.claim}),
                         shown_to_raters=f"claim: {item.claim}\n\n{item.diff}")

    def label_of(self, result: LeafResult) -> Label | None:
        """correct / incorrect / unverifiable / incomplete, or None (see `claim_label_of`)."""
        return claim_label_of(result)


ADAPTERS: tuple[CaseAdapter, ...] = (ClaimAdapter(),)


@dataclass
class CaseOutcome:
    """What the judge decided on one case, and what it was shown."""

    case: JudgeCase
    result: LeafResult
    predicted: Label | None
    judge_evidence: list[str] = field(default_factory=list)
    from_cache: bool = False


@dataclass
class RunStats:
    """What a run cost: cache use, LLM calls, texts embedded, wall time."""

    items: int = 0
    result_cache_hits: int = 0
    llm_calls: int = 0
    llm_cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    embedder_encodings: int = 0
    seconds: float = 0.0
    undecided: dict[str, int] = field(default_factory=dict)  # reason code -> units left without a label
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {k: v for k, v in self.__dict__.items() if k != "warnings"}


def evidence_texts(evidence: LeafEvidence) -> list[str]:
    """The snippets a judge was shown (location and similarity first) and the facts, as text for people (one
    fact a line, never a raw JSON or Python structure: report.html shows these)."""
    texts = [f"{s.location or s.source} (similarity {s.similarity:.2f})\n{s.text}" for s in evidence.snippets]
    facts = evidence.facts.model_dump(mode="json")
    lines = [f"{name.replace('_', ' ')}: {_in_words(value)}" for name, value in sorted(facts.items())
             if value not in (None, [], {}, "")]
    if lines:
        texts.append("facts:\n" + "\n".join(lines))
    return texts


def _in_words(value: Any) -> str:
    """A fact's value as plain text: numbers to 3 decimals, mappings as "key value" pairs, lists comma-separated."""
    if isinstance(value, float):
        return f"{round(value, 3):g}"
    if isinstance(value, dict):
        return "; ".join(f"{key.replace('_', ' ')} {_in_words(item)}" for key, item in sorted(value.items()))
    if isinstance(value, list):
        return ", ".join(f"({_in_words(item)})" if isinstance(item, dict | list) else _in_words(item)
                         for item in value)
    return str(value)


def _unscored(case: JudgeCase, reason: str, judge_name: str) -> LeafResult:
    return LeafResult.unscored(case.leaf, "no_submission_field", reason, judge=judge_name)


@functools.cache
def deciding_code_digest() -> str:
    """Hash of the source of the modules that decide an embedded result.

    The fingerprint's code version is the package version, which a change to a check between releases
    does not move; cached results must not outlive the code that made them.
    """
    files: list[Path] = []
    for package in _DECIDING_PACKAGES:
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            files += sorted(Path(folder).rglob("*.py"))
    for module in _DECIDING_MODULES:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            files.append(Path(spec.origin))
    return content_hash([f"{f.name}:{f.read_bytes().decode('utf-8', 'replace')}" for f in files])[:16]


def _cache_key(case: JudgeCase, hashes: ContentHashes, fingerprint: JudgeFingerprint) -> str:
    # What case.content_hash() holds, from the hashes computed once per task and submission object.
    case_hash = content_hash([hashes.task, hashes.submission, case.leaf.model_dump(mode="json")])
    return content_hash([RESULT_CACHE_VERSION, CLAIM_FEATURES_VERSION, deciding_code_digest(), case_hash,
                         fingerprint.digest])


class _Hashes:
    """Content hashes of the cases' tasks and submissions, once per object (the cases of one JudgeEval
    repository share one task and one 2 MB submission)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, int], tuple[Task, Submission, ContentHashes]] = {}

    def of(self, case: JudgeCase) -> ContentHashes:
        key = (id(case.task), id(case.submission))
        seen = self._seen.get(key)
        if seen is None:  # the objects are kept with their hashes, so an id is never reused meanwhile
            seen = self._seen[key] = (case.task, case.submission, ContentHashes.of(case.task, case.submission))
        return seen[2]


class CaseRunner:
    """Grades cases with one rubric and one judge, concurrency-limited, with a progress bar.

    Args:
        rubric: The rubric the cases' leaves come from (its hash is in the fingerprint).
        judge: The judge to run.
        adapter: Maps results back to labels.
        embedder: Embeddings for evidence alignment (default: the shared offline model).
        result_cache: Where deterministic (embedded) results are kept; None disables result caching.
        concurrency: Cases graded at once.
        console: Where the progress bar goes (default: stderr); None or `progress=False` hides it.
    """

    def __init__(self, rubric: Rubric, judge: Judge, adapter: CaseAdapter, *, embedder: Embedder | None = None,
                 result_cache: ResponseCache | None = None, concurrency: int = 4, progress: bool = True,
                 console: Console | None = None) -> None:
        self.rubric = rubric
        self.judge = judge
        self.adapter = adapter
        self.embedder = embedder or default_embedder()
        self.grader = Grader(rubric, judge, embedder=self.embedder)
        self.fingerprint = self.grader.fingerprint
        # Only a deterministic judge's results may be reused whole; an LLM judge's come from its
        # response cache, which never keeps a failed call.
        self.result_cache = result_cache if isinstance(judge, EmbeddedJudge) else None
        self.concurrency = max(1, concurrency)
        self._expansions: dict[str, dict[str, Leaf]] = {}
        self.progress = progress
        self.console = console or Console(stderr=True)

    def _task_leaves(self, task: Task, task_hash: str) -> dict[str, Leaf]:
        """The rubric's leaves over `task` by id (kept per task)."""
        if task_hash not in self._expansions:
            if len(self._expansions) >= _EXPANSIONS_KEPT:
                self._expansions.clear()
            self._expansions[task_hash] = {leaf.id: leaf for leaf in expand_rubric(self.rubric, task)}
        return self._expansions[task_hash]

    def prepare(self, cases: Sequence[JudgeCase], hashes: Sequence[ContentHashes] | None = None
                ) -> list[PreparedGrade | MalformedDiffError]:
        """Every case prepared by the grading pipeline (copies, gates, evidence), the encoder run once over
        all their texts. A case whose leaf is the rubric's own leaf over its task is prepared within that
        task's grade (once per task and submission content, every leaf of the task beside it), then
        narrowed to its leaf; any other case for its one leaf."""
        hashed = _Hashes()
        hashes = hashes if hashes is not None else [hashed.of(case) for case in cases]
        inputs: list[GradeInput] = []
        whole: dict[tuple[str, str], int] = {}
        slots: list[int] = []
        for case, content in zip(cases, hashes, strict=True):
            if self._task_leaves(case.task, content.task).get(case.leaf.id) == case.leaf:
                key = (content.task, content.submission)
                if key not in whole:
                    whole[key] = len(inputs)
                    inputs.append(GradeInput(case.task, case.submission, None, content))
                slots.append(whole[key])
            else:
                slots.append(len(inputs))
                inputs.append(GradeInput(case.task, case.submission, [case.leaf], content))
        prepared = self.grader.prepare_many(inputs)
        return [p.for_leaves({case.leaf.id}) if isinstance(p := prepared[slot], PreparedGrade) else p
                for case, slot in zip(cases, slots, strict=True)]

    def build_evidence(self, cases: Sequence[JudgeCase]) -> list[LeafEvidence | None]:
        """Evidence of every case's leaf, None where the submission does not parse or a gate decided the
        leaf (nothing for a judge to read)."""
        return [p.evidence[0] if isinstance(p, PreparedGrade) and p.evidence else None
                for p in self.prepare(cases)]

    async def run(self, cases: Sequence[JudgeCase]) -> tuple[list[CaseOutcome], RunStats]:
        """Grade every case; outcomes in input order."""
        started = time.perf_counter()
        encoded_before = self.embedder.encoded_texts
        stats = RunStats(items=len(cases))
        outcomes: list[CaseOutcome | None] = [None] * len(cases)
        pending: list[int] = []
        hashed = _Hashes()
        hashes = [hashed.of(case) for case in cases]
        keys = [_cache_key(case, content, self.fingerprint) for case, content in zip(cases, hashes, strict=True)]
        for index, case in enumerate(cases):
            hit = await self.result_cache.get(keys[index]) if self.result_cache is not None else None
            if hit is None:
                pending.append(index)
                continue
            result = LeafResult.model_validate(hit["result"])
            outcomes[index] = CaseOutcome(case, result, self.adapter.label_of(result),
                                          list(hit.get("evidence", [])), from_cache=True)
            stats.result_cache_hits += 1
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=self.console, disable=not self.progress,
                      transient=False) as bar:
            task_id = bar.add_task(f"{escape(self.judge.name)} on {len(cases)} items", total=len(cases),
                                   completed=len(cases) - len(pending))
            prepared = await asyncio.to_thread(self.prepare, [cases[i] for i in pending], [hashes[i] for i in pending])
            semaphore = asyncio.Semaphore(self.concurrency)

            async def one(index: int, item: PreparedGrade | MalformedDiffError) -> None:
                async with semaphore:
                    outcomes[index] = await self._judge(cases[index], item, keys[index], stats)
                bar.advance(task_id)

            await asyncio.gather(*(one(i, p) for i, p in zip(pending, prepared, strict=True)))
        done = [o for o in outcomes if o is not None]
        for outcome in done:
            if outcome.predicted is None:
                code = outcome.result.reason_code or outcome.result.verdict
                stats.undecided[code] = stats.undecided.get(code, 0) + 1
        stats.embedder_encodings = self.embedder.encoded_texts - encoded_before
        stats.seconds = round(time.perf_counter() - started, 3)
        return done, stats

    async def _judge(self, case: JudgeCase, prepared: PreparedGrade | MalformedDiffError, key: str,
                     stats: RunStats) -> CaseOutcome:
        if isinstance(prepared, MalformedDiffError):
            reason = "the diff does not parse as a unified diff"
            stats.warnings.append(f"{case.item.item_id}: {reason}")
            return CaseOutcome(case, _unscored(case, reason, self.judge.name), None)
        judged = await self.grader.judge_prepared(prepared)
        usage = judged.usage
        stats.llm_calls += usage.llm_calls
        stats.llm_cache_hits += usage.cache_hits
        stats.prompt_tokens += usage.prompt_tokens
        stats.completion_tokens += usage.completion_tokens
        stats.cost_usd += usage.cost_usd
        result = judged.results[0]
        shown = evidence_texts(prepared.evidence[0]) if prepared.evidence else []
        if self.result_cache is not None:
            await self.result_cache.set(key, {"result": result.model_dump(mode="json"), "evidence": shown})
        return CaseOutcome(case, result, self.adapter.label_of(result), shown)


def adapter_for(items: Sequence[LabelledItem]) -> CaseAdapter:
    """The adapter that can grade these items.

    Raises:
        InputError: no adapter accepts them (e.g. a labels file, whose items carry no content to judge).
    """
    for adapter in (*ADAPTERS, JudgeEvalAdapter()):
        if items and all(adapter.accepts(item) for item in items):
            return adapter
    kinds = sorted({type(item).__name__ for item in items}) or ["none"]
    raise InputError(
        f"no judge adapter for items of type {', '.join(kinds)}: calibration needs items that carry what "
        "the judge grades (e.g. a CRScore claims folder, whose items hold the diff and the claim)",
        field="labels",
    )
