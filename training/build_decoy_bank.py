"""Build judge/checks/requirement/decoy_bank.npz: the decoy units the requirement check scales its text
similarity against (judge/checks/requirement/decoys.py).

Decoys: every acting code unit of the TRAIN half of the gt_code papers' own code (`reference_cases.split_papers`,
the half the requirement model trains on), and up to `PER_REPOSITORY` acting units (every k-th, in file order) of
the official code of the TRAIN half of the PaperBench papers (`paperbench_cases.paper_split`). The held-out halves
stay out, so the benches' figures are not measured against their own code. Stored: the units' path-free
embeddings (float16) and their line hashes, not their code.

Reproduce:  .venv/bin/python training/build_decoy_bank.py   (about a minute on 2 cores)
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
from judge.checks.requirement.decoys import BANK_FILE, decoy_text, pack_bank, unit_line_hashes  # noqa: E402
from judge.embeddings.encoder import default_embedder  # noqa: E402
from judge.submission.code_units import units_from_diff  # noqa: E402
from judge.submission.diff import parse_diff  # noqa: E402

PER_REPOSITORY = 600
TARGET = Path(__file__).resolve().parents[1] / "judge" / "checks" / "requirement" / BANK_FILE
# Stored in the bank itself, so the shipped file names what rebuilds it.
REBUILD_COMMAND = ".venv/bin/python training/build_decoy_bank.py"


def main() -> None:
    started = time.perf_counter()
    cases = all_cases()
    train, held_out = split_papers(sorted({c.paper for c in cases}))
    seen: set[str] = set()
    texts: list[str] = []
    hashes: list[list[int]] = []
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
            hashes.append(unit_line_hashes(units[n]))
    embedder = default_embedder()
    vectors = embedder.encode(texts)
    np.savez_compressed(TARGET, **pack_bank(np.asarray(vectors), hashes, embedder.model_id),
                        command=np.array(REBUILD_COMMAND))
    print(f"decoy bank: {len(texts)} units of the gt_code train papers {', '.join(train)} (held out: "
          f"{', '.join(held_out)}) and the PaperBench train papers {', '.join(pb_train)} (held out: "
          f"{', '.join(pb_held_out)}); "
          f"{TARGET.stat().st_size / 1e6:.2f} MB written to {TARGET} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
