"""Hostile request bodies of a chosen size for POST /v1/grade: huge diffs, huge texts, deep nesting, garbage.

Each case is raw bytes (what a client sends) built from the bundled example request, so the same cases
serve the bounded test (sizes just above the tests' body limit) and bench/service/bad_input.py (100 MB diffs, a
diff of 100,000 files, a 50 MB conclusion). Allowed answers: 413 (over the body limit), 400/422 naming
the field, or 200 with a grade; never a 5xx, a hang or a dead server.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable
from typing import Any

# Answers a hostile body may get: refused (too large, undecodable, invalid) or graded.
ALLOWED = frozenset({200, 400, 413, 422})


def _request(example: dict[str, Any], **submission: Any) -> dict[str, Any]:
    marker = uuid.uuid4().hex[:10]
    base = {**example["submission"], "submission_id": f"bad-{marker}", "run_id": f"bad-{marker}"}
    return {**example, "submission": {**base, **submission}}


def _encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def big_diff(example: dict[str, Any], size: int) -> bytes:
    """One new file whose added lines make the body about `size` bytes."""
    line = "+    loss = criterion(model(batch), target)  # step\n"
    count = max(1, size // len(line))
    diff = f"--- /dev/null\n+++ b/train_big.py\n@@ -0,0 +1,{count} @@\n" + line * count
    return _encode(_request(example, diff=diff))


def many_files_diff(example: dict[str, Any], files: int) -> bytes:
    """A diff adding `files` files of one line each."""
    parts = [f"--- /dev/null\n+++ b/pkg/module_{i}.py\n@@ -0,0 +1 @@\n+VALUE_{i} = {i}\n" for i in range(files)]
    return _encode(_request(example, diff="".join(parts)))


def big_conclusion(example: dict[str, Any], size: int) -> bytes:
    """A conclusion of about `size` bytes of sentences."""
    sentence = "The JSD between MDGEN and the reference trajectories was 0.09 on backbone torsions. "
    return _encode(_request(example, conclusion=sentence * max(1, size // len(sentence))))


def deep_nesting(example: dict[str, Any], depth: int) -> bytes:
    """The submission's metadata nested `depth` lists deep (built as text: json cannot write it)."""
    body = _encode(_request(example, metadata={"deep": "__DEEP__"}))
    return body.replace(b'"__DEEP__"', b"[" * depth + b"]" * depth)


def binary_garbage(_example: dict[str, Any], size: int) -> bytes:
    """Random bytes sent as application/json."""
    return random.Random(size).randbytes(size)


def invalid_utf8(example: dict[str, Any], size: int) -> bytes:
    """A valid request whose diff string holds bytes that are not UTF-8."""
    body = _encode(_request(example, diff="__BAD__"))
    garbage = b"\xff\xfe\xc3\x28\xa0\xa1\xe2\x28\xa1" * max(1, size // 9)
    return body.replace(b"__BAD__", garbage)


def control_character_diff(example: dict[str, Any], size: int) -> bytes:
    """A diff of NULs, escapes and other control characters (valid JSON, valid UTF-8)."""
    noise = "".join(chr(c) for c in range(32) if c not in (10,)) * max(1, size // 31)
    return _encode(_request(example, diff=f"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-{noise}\n+{noise}\n"))


CASES: dict[str, Callable[[dict[str, Any], int], bytes]] = {
    "big diff": big_diff,
    "diff of many files": many_files_diff,
    "big conclusion": big_conclusion,
    "deep nesting": deep_nesting,
    "binary garbage": binary_garbage,
    "invalid UTF-8": invalid_utf8,
    "control characters": control_character_diff,
}
