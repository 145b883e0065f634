"""A code-reading signal from the local coder model: P(yes) that a span of code implements a requirement.

The prompt is laid out code first: the candidate code, then (when given) the requirement's reference span
as trusted ground truth, and the requirement last, closed by a yes/no question; the answer is read from
the next-token logits, normalised over the "yes"/"no" token ids (`YES_WORDS`, `NO_WORDS`). No text is
generated and nothing is sampled, so a reading is a pure function of the model file and the prompt.

Cost: a prompt is evaluated in two fixed pieces, the head (system turn and candidate code) and the tail
(reference, requirement, question). The head's key-value cache is kept between calls, so consecutive
requirements read against the same code evaluate only their tail (`Reading.reused_tokens` says how many
tokens were not evaluated again). Because the pieces are always the same, a prompt's logits do not depend
on which call came before it. Code and reference are capped at a token budget, whole lines kept and a
marker line saying how many were left out (`truncate_lines`).

Readings are cached by content (`cache_key`: the model file's SHA-256 and the prompt) in memory and,
given `cache_file`, in a JSON-lines file that later processes read back; a cached reading needs only the
model's tokenizer, not the model. The raw P(yes) of a 1.5B model is biased towards "yes": treat it as a
feature to calibrate (e.g. its logit in a fitted model), not as a probability to threshold at 0.5.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from judge.errors import JudgeConfigError
from judge.local_models import coder, install_commands

CODE_TOKEN_BUDGET = 384
REFERENCE_TOKEN_BUDGET = 192
REQUIREMENT_TOKEN_BUDGET = 256
N_CTX = 2048
N_BATCH = 512
YES_WORDS = ("yes", "Yes")
NO_WORDS = ("no", "No")
TRUNCATION_MARKER = "... [{count} more lines not shown]"
SYSTEM = "You are a meticulous code reviewer. You read code and answer with exactly one word: yes or no."
QUESTION = "Does the candidate code implement this requirement? Answer yes or no."
QUESTION_WITH_REFERENCE = (
    "Does the candidate code implement this requirement, doing what the reference "
    "implementation does? Answer yes or no."
)
# llama-cpp-python reads the coder model in this process; the coder-model extra installs it with the parts.
LLAMA_CPP_HINT = ("llama-cpp-python is not installed (the coder model is read with it, in this process); "
                  + install_commands.run_from_checkout(coder.INSTALL_HINT))

CountTokens = Callable[[str], int]


@dataclass(frozen=True)
class CodePrompt:
    """A prompt in its two pieces (`head` + `tail` is the whole text) and what was cut to fit the budgets."""

    head: str
    tail: str
    code_truncated: bool = False
    reference_truncated: bool = False

    @property
    def text(self) -> str:
        return self.head + self.tail


@dataclass(frozen=True)
class Reading:
    """One answer: P(yes) normalised over the yes/no tokens, and what it cost.

    `answer_mass` is the share of the whole next-token distribution on the yes/no tokens (low: the model
    wanted to say something else). `seconds` is the wall time the prompt took when it was evaluated and
    `cpu_seconds` the CPU time of this process meanwhile (on a shared machine the wall time includes waiting
    for a core); `cached`: this call found it in the cache and cost nothing.
    """

    p_yes: float
    answer_mass: float
    prompt_tokens: int
    evaluated_tokens: int
    reused_tokens: int
    seconds: float
    key: str
    truncated: bool = False
    cached: bool = False
    cpu_seconds: float | None = None  # None: not recorded (a cache line written before it was)


@dataclass
class ReaderStats:
    """Totals over a reader's calls."""

    calls: int = 0
    cache_hits: int = 0
    model_seconds: float = 0.0
    model_cpu_seconds: float = 0.0
    evaluated_tokens: int = 0
    reused_tokens: int = 0
    load_seconds: float = 0.0
    per_call_seconds: list[float] = field(default_factory=list)


def truncate_lines(text: str, budget: int, count_tokens: CountTokens) -> tuple[str, bool]:
    """`text` cut to about `budget` tokens: whole lines from the top, then a marker naming how many lines
    were left out. A first line longer than the budget is cut to its longest start that fits.

    Returns:
        The text that fits and whether anything was cut.
    """
    if count_tokens(text) <= budget:
        return text, False
    lines = text.split("\n")
    kept: list[str] = []
    used = count_tokens(TRUNCATION_MARKER.format(count=len(lines))) + 1
    for line in lines:
        cost = count_tokens(line + "\n")
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    if not kept:  # one very long line: keep the longest start of it that fits (found by bisection)
        room = max(0, budget - used)
        low, high = 0, len(lines[0])
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if count_tokens(lines[0][:middle]) <= room else (low, middle - 1)
        kept = [lines[0][:low]]
        left = len(lines)
    else:
        left = len(lines) - len(kept)
    return "\n".join([*kept, TRUNCATION_MARKER.format(count=left)]), True


def inert(text: str) -> str:
    """`text` with every chat-format marker opening (`<|`) broken, so a submission's text cannot close the
    user turn or open another (the prompt is tokenized with its special tokens read as such)."""
    return text.replace("<|", "<\u200b|")


def layout(code: str, requirement: str, reference: str | None = None) -> CodePrompt:
    """The prompt in Qwen's chat format: head = system turn and candidate code; tail = the reference span
    (when given), the requirement and the question, then the assistant turn's opening."""
    head = (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
        f"Candidate code:\n```\n{inert(code.strip(chr(10)))}\n```\n\n"
    )
    parts = []
    if reference is not None:
        parts.append(
            "Reference implementation of the requirement (trusted ground truth; the candidate may "
            f"differ in names and layout):\n```\n{inert(reference.strip(chr(10)))}\n```\n\n"
        )
    question = QUESTION if reference is None else QUESTION_WITH_REFERENCE
    parts.append(f"Requirement: {inert(requirement.strip())}\n\n{question}<|im_end|>\n<|im_start|>assistant\n")
    return CodePrompt(head=head, tail="".join(parts))


def build_prompt(
    code: str,
    requirement: str,
    reference: str | None,
    count_tokens: CountTokens,
    *,
    code_budget: int = CODE_TOKEN_BUDGET,
    reference_budget: int = REFERENCE_TOKEN_BUDGET,
    requirement_budget: int = REQUIREMENT_TOKEN_BUDGET,
) -> CodePrompt:
    """`layout` with the code, the reference and the requirement each capped at its token budget."""
    code_text, code_cut = truncate_lines(code, code_budget, count_tokens)
    reference_text, reference_cut = (
        (None, False) if reference is None else truncate_lines(reference, reference_budget, count_tokens)
    )
    requirement_text, _ = truncate_lines(requirement, requirement_budget, count_tokens)
    prompt = layout(code_text, requirement_text, reference_text)
    return CodePrompt(prompt.head, prompt.tail, code_truncated=code_cut, reference_truncated=reference_cut)


def cache_key(model_sha: str, prompt: CodePrompt) -> str:
    """The content hash a reading is cached under: the model file's SHA-256 and the whole prompt."""
    digest = hashlib.sha256()
    for part in (model_sha, prompt.head, prompt.tail):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


def available() -> bool:
    """True when llama-cpp-python and every part package of the coder model are installed."""
    return importlib.util.find_spec("llama_cpp") is not None and coder.installed()


class ReadingCache:
    """Readings by key in memory, mirrored to an append-only JSON-lines file when `path` is given."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._readings: dict[str, Reading] = {}
        if path is not None and path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self._readings[row["key"]] = Reading(**row)
                except (ValueError, TypeError, KeyError):
                    continue  # a line cut short by a crash: read again when asked

    def __len__(self) -> int:
        return len(self._readings)

    def get(self, key: str) -> Reading | None:
        return self._readings.get(key)

    def put(self, reading: Reading) -> None:
        self._readings[reading.key] = reading
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(asdict(reading)) + "\n")


class CodeReader:
    """Reads code with the coder model in this process (llama-cpp-python, no server).

    Args:
        model_path: A GGUF file (default: the verified coder model, assembled on first use).
        model_sha: Its SHA-256 for the cache keys (default: the coder model's recorded hash; computed from
            the file when `model_path` is given without it).
        n_threads: llama.cpp threads.
        cache_file: A JSON-lines file of readings shared between runs (None: memory only).
        code_budget, reference_budget: Token caps of the candidate code and the reference span.

    The model is loaded at the first reading that is not cached; one reader serves one thread at a time
    (calls are serialised by a lock).

    Raises (on first use):
        JudgeConfigError: llama-cpp-python or the coder model is not installed (naming the install command).
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        model_sha: str | None = None,
        n_threads: int = 2,
        cache_file: Path | None = None,
        code_budget: int = CODE_TOKEN_BUDGET,
        reference_budget: int = REFERENCE_TOKEN_BUDGET,
        n_ctx: int = N_CTX,
    ) -> None:
        self._model_path = model_path
        self._model_sha = model_sha
        self.n_threads = n_threads
        self.n_ctx = n_ctx
        self.code_budget = code_budget
        self.reference_budget = reference_budget
        self.cache = ReadingCache(cache_file)
        self.stats = ReaderStats()
        self._lock = threading.RLock()
        self._vocab: Any = None
        self._llm: Any = None
        self._answer_ids: tuple[list[int], list[int]] | None = None
        self._head_tokens: list[int] = []

    @property
    def name(self) -> str:
        """The model file and its SHA-256 (first 16 hex digits), as a judge's fingerprint records it."""
        if self._model_path is None:
            return coder.ALIAS
        return f"{self._model_path.name}@sha256:{self.model_sha[:16]}"

    @property
    def model_sha(self) -> str:
        if self._model_sha is None:
            self._model_sha = coder.SHA256 if self._model_path is None else coder.file_sha256(self._model_path)
        return self._model_sha

    def _path(self) -> Path:
        if importlib.util.find_spec("llama_cpp") is None:
            raise JudgeConfigError(LLAMA_CPP_HINT, field="coder-model")
        if self._model_path is None:
            self._model_path = coder.ensure_model()
        elif not self._model_path.is_file():
            raise JudgeConfigError(f"the coder model file {self._model_path} does not exist", field="coder-model")
        return self._model_path

    def _tokenizer(self) -> Any:
        if self._llm is not None:
            return self._llm
        if self._vocab is None:
            from llama_cpp import Llama

            self._vocab = Llama(model_path=str(self._path()), vocab_only=True, verbose=False)
        return self._vocab

    def tokenize(self, text: str) -> list[int]:
        """The model's tokens of `text` (chat-format markers read as special tokens)."""
        return list(self._tokenizer().tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def prompt(self, code: str, requirement: str, reference: str | None = None) -> CodePrompt:
        """The capped prompt for one reading."""
        return build_prompt(
            code,
            requirement,
            reference,
            self.count_tokens,
            code_budget=self.code_budget,
            reference_budget=self.reference_budget,
        )

    def _model(self) -> Any:
        if self._llm is None:
            from llama_cpp import Llama

            started = time.perf_counter()
            self._llm = Llama(
                model_path=str(self._path()),
                n_ctx=self.n_ctx,
                n_batch=N_BATCH,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                logits_all=False,
                verbose=False,
            )
            self.stats.load_seconds += time.perf_counter() - started
            if self._vocab is not None:
                self._vocab.close()
                self._vocab = None
            self._answer_ids = (self._word_ids(YES_WORDS), self._word_ids(NO_WORDS))
        return self._llm

    def _word_ids(self, words: Sequence[str]) -> list[int]:
        ids = [self.tokenize(word) for word in words]
        if any(len(found) != 1 for found in ids):
            raise JudgeConfigError(
                f"the model does not spell {list(words)} as single tokens: {ids}", field="coder-model"
            )
        return [found[0] for found in ids]

    def read(self, code: str, requirement: str, reference: str | None = None) -> Reading:
        """P(yes) that `code` implements `requirement` (given `reference`, its trusted reference span)."""
        with self._lock:
            prompt = self.prompt(code, requirement, reference)
            key = cache_key(self.model_sha, prompt)
            self.stats.calls += 1
            found = self.cache.get(key)
            if found is not None:
                self.stats.cache_hits += 1
                return Reading(**{**asdict(found), "cached": True})
            reading = self._evaluate(prompt, key)
            self.cache.put(reading)
            self.stats.model_seconds += reading.seconds
            self.stats.model_cpu_seconds += reading.cpu_seconds or 0.0
            self.stats.evaluated_tokens += reading.evaluated_tokens
            self.stats.reused_tokens += reading.reused_tokens
            self.stats.per_call_seconds.append(reading.seconds)
            return reading

    def read_many(self, requests: Sequence[tuple[str, str, str | None]]) -> list[Reading]:
        """Readings of (code, requirement, reference) triples in their order, evaluated grouped by code (the
        same code's requirements one after the other, so its head is evaluated once)."""
        order = sorted(range(len(requests)), key=lambda i: (requests[i][0], requests[i][2] is not None, i))
        out: dict[int, Reading] = {i: self.read(*requests[i]) for i in order}
        return [out[i] for i in range(len(requests))]

    def p_yes_many(self, requests: Sequence[tuple[str, str]]) -> list[float]:
        """P(yes) of (code, requirement) pairs read without a reference (what `EmbeddedJudge` asks)."""
        return [r.p_yes for r in self.read_many([(code, requirement, None) for code, requirement in requests])]

    def _evaluate(self, prompt: CodePrompt, key: str) -> Reading:
        import llama_cpp
        import numpy as np

        llm = self._model()
        head, tail = self.tokenize(prompt.head), self.tokenize(prompt.tail)
        if len(head) + len(tail) >= self.n_ctx:
            raise JudgeConfigError(
                f"a prompt of {len(head) + len(tail)} tokens does not fit the context of "
                f"{self.n_ctx}: lower the token budgets",
                field="coder-model",
            )
        started, cpu_started = time.perf_counter(), time.process_time()
        reused = len(head) if (self._head_tokens == head and llm.n_tokens >= len(head)) else 0
        llm.n_tokens = reused
        if not reused:
            self._head_tokens = []
            llm.eval(head)
            self._head_tokens = head
        llm.eval(tail)
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
        logits = logits.astype(np.float64)
        assert self._answer_ids is not None
        yes_ids, no_ids = self._answer_ids
        top = float(logits.max())
        total = float(np.exp(logits - top).sum())
        yes = float(np.exp(logits[yes_ids] - top).sum())
        no = float(np.exp(logits[no_ids] - top).sum())
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
        return Reading(
            p_yes=yes / (yes + no),
            answer_mass=(yes + no) / total,
            prompt_tokens=len(head) + len(tail),
            evaluated_tokens=len(tail) + (len(head) - reused),
            reused_tokens=reused,
            seconds=seconds,
            cpu_seconds=cpu_seconds,
            key=key,
            truncated=prompt.code_truncated or prompt.reference_truncated,
        )

    def close(self) -> None:
        """Free the model (a later reading loads it again)."""
        with self._lock:
            for handle in (self._llm, self._vocab):
                if handle is not None:
                    handle.close()
            self._llm = self._vocab = None
            self._head_tokens = []


_SHARED: dict[str, CodeReader] = {}
_SHARED_LOCK = threading.Lock()


def shared_reader(n_threads: int = 2) -> CodeReader:
    """The process's reader of the verified coder model, its readings cached in memory and in
    `readings.jsonl` beside the model file (so later processes read them back).

    Raises:
        JudgeConfigError: llama-cpp-python or the coder model is not installed (naming the install command).
    """
    if importlib.util.find_spec("llama_cpp") is None:
        raise JudgeConfigError(LLAMA_CPP_HINT, field="judge")
    if not coder.installed():
        raise JudgeConfigError("the coder model is not installed; "
                               + install_commands.run_from_checkout(coder.INSTALL_HINT), field="judge")
    with _SHARED_LOCK:
        if "coder" not in _SHARED:
            _SHARED["coder"] = CodeReader(n_threads=n_threads, cache_file=coder.model_dir() / "readings.jsonl")
        return _SHARED["coder"]


def logit(p: float, floor: float = 1e-6) -> float:
    """log(p / (1 - p)), clipped away from 0 and 1: how a P(yes) enters a linear model."""
    p = min(1.0 - floor, max(floor, p))
    return math.log(p / (1.0 - p))
