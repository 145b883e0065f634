"""The task's reference implementation as ground truth: its files, each requirement's span of it, and
restored masked files as an integrity finding.

- `sources`: `reference_sources(task)` (path -> full text) and the citations requirements make.
- `spans`: `ReferenceIndex` / `reference_index_for(task)`, `span_for(requirement)` and `spans_for`.
- `leaves`: setting the spans on a grade's evidence and recording them on its leaf results.
- `repository`: the reference files read from the paper's repository (`--reference-repo DIR|TAR`).
- `restored`: `reference_restored`, a diff that restores the masked reference files.
"""

from judge.reference.sources import Citation, parse_citations, reference_sources, repository_path, resolve_path
from judge.reference.spans import ReferenceIndex, reference_index_for

__all__ = [
    "Citation",
    "ReferenceIndex",
    "parse_citations",
    "reference_index_for",
    "reference_sources",
    "repository_path",
    "resolve_path",
]
