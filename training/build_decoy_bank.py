"""Build judge/checks/requirement/decoy_bank.npz: the decoy units the requirement check scales its text
similarity against (judge/checks/requirement/decoys.py).

Decoys: every acting code unit of the TRAIN half of the gt_code papers' own code (`reference_cases.split_papers`,
the half the requirement model trains on), and up to `PER_REPOSITORY` acting units (every k-th, in file order) of
the official code of the TRAIN half of the PaperBench papers (`paperbench_cases.paper_split`). The held-out halves
stay out, so the benches' figures are not measured against their own code. Stored: the units' path-free
embeddings (float16), the embeddings of their abstracted text (`decoys.abstract_text`: no names of their own) and
their line hashes, not their code.

Reproduce:  .venv/bin/python training/build_decoy_bank.py [--reuse-vectors]   (about two minutes on 2 cores;
            --reuse-vectors keeps the packaged bank's unit vectors when it has as many rows, embedding only the
            abstracted texts)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[1] / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment

configure_offline_environment()

import numpy as np  # noqa: E402
from paperbench_cases import code_diff, paper_split  # noqa: E402
from reference_cases import all_cases, split_papers  # noqa: E402

from judge.checks.requirement.acts import SubmissionActs  # noqa: E402
from judge.checks.requirement.decoys import (  # noqa: E402
    BANK_FILE,
    decoy_text,
    pack_bank,
    unit_abstract_text,
    unit_line_hashes,
)
from judge.embeddings.encoder import default_embedder  # noqa: E402
from judge.submission.code_units import units_from_diff  # noqa: E402
from judge.submission.diff import parse_diff  # noqa: E402

PER_REPOSITORY = 600
TARGET = Path(__file__).resolve().parents[1] / "judge" / "checks" / "requirement" / BANK_FILE
# Stored in the bank itself, so the shipped file names what rebuilds it.
REBUILD_COMMAND = ".venv/bin/python training/build_decoy_bank.py"


def _stored_vectors(rows: int, model: str) -> np.ndarray | None:
    """The packaged bank's unit vectors when it holds the same number of rows from the same model (the units are
    read in a fixed order from the same data), else None."""
    if not TARGET.exists():
        return None
    with np.load(TARGET, allow_pickle=False) as data:
        if len(data["vectors"]) != rows or str(data["model"]) != model:
            return None
        return np.asarray(data["vectors"], dtype=np.float32)


def main() -> None:
    reuse = "--reuse-vectors" in sys.argv[1:]
    started = time.perf_counter()
    cases = all_cases()
    train, held_out = split_papers(sorted({c.paper for c in cases}))
    seen: set[str] = set()
    texts: list[str] = []
    hashes: list[list[int]] = []
    abstracts: list[str] = []
    pb_train, pb_held_out = paper_split()
    diffs = [c.diff for c in cases if c.paper in train] + [code_diff(p) for p in pb_train]
    for number, diff in enumerate(diffs):
        units = units_from_diff(parse_diff(diff))
        acts = SubmissionActs.build(units)
        acting = [n for n in range(len(units)) if acts.acts(n) and len(unit_line_hashes(units[n])) >= 2]
        if number >= len(diffs) - len(pb_train):  # a whole repository: an even sample of its units
            acting = acting[:: max(1, len(acting) // PER_REPOSITORY)][:PER_REPOSITORY]
        for n in acting:
            text = decoy_text(units[n])
            if text in seen:
                continue
            seen.add(text)
            texts.append(text)
            abstracts.append(unit_abstract_text(acts, n))
            hashes.append(unit_line_hashes(units[n]))
    embedder = default_embedder()
    vectors = _stored_vectors(len(texts), embedder.model_id) if reuse else None
    if vectors is None:
        vectors = embedder.encode(texts)
    abstract_vectors = embedder.encode(abstracts)
    np.savez_compressed(TARGET, **pack_bank(np.asarray(vectors), hashes, embedder.model_id,
                                            np.asarray(abstract_vectors)), command=np.array(REBUILD_COMMAND))
    print(f"decoy bank: {len(texts)} units of the gt_code train papers {', '.join(train)} (held out: "
          f"{', '.join(held_out)}) and the PaperBench train papers {', '.join(pb_train)} (held out: "
          f"{', '.join(pb_held_out)}); "
          f"{TARGET.stat().st_size / 1e6:.2f} MB written to {TARGET} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
