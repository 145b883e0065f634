"""Build judge/checks/requirement/decoy_bank.npz: the decoy units the requirement check scales its text
similarity against (judge/checks/requirement/decoys.py).

Decoys: every acting code unit of the TRAIN half of the gt_code papers' own code (`reference_cases.split_papers`,
the half the requirement model trains on; the held-out half and PaperBench's code stay out, so the bench's
figures are not measured against their own code). Stored: the units' path-free embeddings (float16) and their
line hashes, not their code.

Reproduce:  .venv/bin/python bench/build_decoy_bank.py   (about a minute on 2 cores)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge.settings import configure_offline_environment

configure_offline_environment()

import numpy as np  # noqa: E402
from reference_cases import all_cases, split_papers  # noqa: E402

from judge.checks.requirement.acts import SubmissionActs  # noqa: E402
from judge.checks.requirement.decoys import BANK_FILE, decoy_text, pack_bank, unit_line_hashes  # noqa: E402
from judge.embeddings.encoder import default_embedder  # noqa: E402
from judge.submission.code_units import units_from_diff  # noqa: E402
from judge.submission.diff import parse_diff  # noqa: E402

TARGET = Path(__file__).resolve().parent.parent / "judge" / "checks" / "requirement" / BANK_FILE


def main() -> None:
    started = time.perf_counter()
    cases = all_cases()
    train, held_out = split_papers(sorted({c.paper for c in cases}))
    seen: set[str] = set()
    texts: list[str] = []
    hashes: list[list[int]] = []
    for case in (c for c in cases if c.paper in train):
        units = units_from_diff(parse_diff(case.diff))
        acts = SubmissionActs.build(units)
        for n, unit in enumerate(units):
            text = decoy_text(unit)
            if not acts.acts(n) or text in seen or len(unit_line_hashes(unit)) < 2:
                continue
            seen.add(text)
            texts.append(text)
            hashes.append(unit_line_hashes(unit))
    embedder = default_embedder()
    vectors = embedder.encode(texts)
    np.savez_compressed(TARGET, **pack_bank(np.asarray(vectors), hashes, embedder.model_id))
    print(f"decoy bank: {len(texts)} units of the train papers {', '.join(train)} (held out: {', '.join(held_out)}); "
          f"{TARGET.stat().st_size / 1e6:.2f} MB written to {TARGET} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
