"""The code part of a judge fingerprint: a digest of the judging code and of the model files it ships.

A version string ("expjudge 0.3.1") let a cached verdict outlive a change of the code that decided it: the grade
cache is keyed on the fingerprint, and judging code changed without a version bump answered with the old
verdicts. The digest is taken over every file of the `judge` package that can decide a verdict (sources and
the data files beside them, such as the requirement check's `decoy_bank.npz`), so any such change is a new
fingerprint, hence a grade-cache miss. The rubric's own learned models are covered by the rubric hash and the
embedding model by `JudgeFingerprint.embedding_model`, both already in the fingerprint.

Left out are the parts that move grades around without deciding them (the CLI, the store, jobs, regrade,
clients, loaders whose output is itself hashed into the cache key): changing how a grade is stored or shown
must not throw away every cached grade.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator
from pathlib import Path

import judge

# Top-level entries of the `judge` package that never decide a verdict. Everything else is judging code, so a new
# module is covered until someone decides otherwise here.
NOT_JUDGING = frozenset({
    "cli", "store", "jobs", "regrade", "devtools", "integrations", "loaders",
    "client.py", "client_labels.py", "client_models.py", "gc_tuning.py", "local_llm.py", "schemas.py",
    "validation_paths.py",
})
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
DIGEST_CHARS = 16


def judging_files(root: Path) -> Iterator[Path]:
    """The files under the package folder `root` whose content can decide a verdict, in a stable order."""
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if entry.name in NOT_JUDGING or entry.name == "__pycache__":
            continue
        if entry.is_dir():
            yield from (path for path in sorted(entry.rglob("*"), key=lambda p: p.as_posix())
                        if path.is_file() and "__pycache__" not in path.parts
                        and not path.name.endswith(_SKIPPED_SUFFIXES))
        elif entry.is_file() and not entry.name.endswith(_SKIPPED_SUFFIXES):
            yield entry


def digest_of(root: Path) -> str:
    """The digest of the judging files under `root`: each file's path (relative to `root`) and bytes."""
    digest = hashlib.sha256()
    for path in judging_files(root):
        name = path.relative_to(root).as_posix().encode()
        data = path.read_bytes()
        # Name and length delimit each file: moving bytes from one file to the next changes the digest.
        digest.update(len(name).to_bytes(4, "big") + name + len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()[:DIGEST_CHARS]


@functools.cache
def judging_code_digest() -> str:
    """The digest of this process's judging code (computed once: about 4 MB are read, a few milliseconds)."""
    return digest_of(Path(judge.__file__).parent)


def code_version() -> str:
    """The grading code as recorded in fingerprints: the package version and the digest of the judging code,
    e.g. "expjudge 0.3.1 code 3fa2b1c9d0e1f2a3"."""
    return f"expjudge {judge.__version__} code {judging_code_digest()}"
