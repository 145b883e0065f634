"""The sibling index answers what the all-pairs contrasts answered, in memory linear in the requirements."""

from __future__ import annotations

import random
import tracemalloc

from judge.submission.distinguishing import check_distinguishing, distinguishing_terms
from judge.submission.sibling_index import SiblingIndex
from tests.judge.submission.test_distinguishing import DENSE_RUN, RUBRIC, SPARSE_RUN

WORDS = ["train", "sac", "hopper", "sparse", "dense", "reward", "policy", "loss", "jensen", "shannon", "tica",
         "torsion", "backbone", "model", "10", "20", "cifar", "resnet50", "HalfCheetah", "walker"]


def _random_rubric(rng: random.Random) -> list[str]:
    rubric: list[str] = []
    for _ in range(rng.randint(1, 30)):
        if rubric and rng.random() < 0.2:  # requirements with exactly the terms of another
            rubric.append(rng.choice(rubric))
            continue
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6)))
        variable = f" variable {rng.randint(0, 4)}" if rng.random() < 0.5 else ""
        rubric.append(f"Step {len(rubric) + 1}: {words}{variable}")
    return rubric


def test_same_answers_as_the_contrasts_on_the_sibling_rubric() -> None:
    index = SiblingIndex(RUBRIC)
    old = distinguishing_terms(RUBRIC)
    for row in range(len(RUBRIC)):
        assert index.identical_to(row) == old[row].identical_to
        assert index.has_contrasts(row) == bool(old[row].contrasts)
        for run in (DENSE_RUN, SPARSE_RUN, ""):
            assert index.points_to_siblings(row, run) == bool(check_distinguishing(run, old[row]).points_to_siblings)
    assert index.points_to_siblings(1, SPARSE_RUN)  # "Hopper" evidence that says "sparse" reads as the sibling's


def test_same_answers_as_the_contrasts_on_random_rubrics_and_block_sizes() -> None:
    rng = random.Random(7)
    pointed = 0
    for _ in range(200):
        rubric = _random_rubric(rng)
        old = distinguishing_terms(rubric)
        index = SiblingIndex(rubric, block=rng.choice([1, 3, 1000]))
        for row in rng.sample(range(len(rubric)), len(rubric)):  # any order: a block is worked out again
            evidence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 8)))
            expected = bool(check_distinguishing(evidence, old[row]).points_to_siblings)
            assert index.points_to_siblings(row, evidence) == expected, (rubric, row, evidence)
            assert index.identical_to(row) == old[row].identical_to
            assert index.has_contrasts(row) == bool(old[row].contrasts)
            pointed += expected
    assert pointed > 50  # the random rubrics do exercise the pointing case


def _walk_peak(count: int) -> int:
    rubric = [f"Compute the divergence of collective variable {n} for run-x" for n in range(count)]
    tracemalloc.start()
    try:
        index = SiblingIndex(rubric)
        for row in range(count):
            index.has_contrasts(row)
            index.points_to_siblings(row, "def divergence(variable, run): return kl(variable, run)")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_grows_linearly_with_same_shape_requirements() -> None:
    # Every such requirement is a sibling of every other: the all-pairs contrasts held count² objects
    # (5,000 of them: 16 GB). Here four times the requirements may take at most ~4x the memory, not 16x.
    small, large = _walk_peak(500), _walk_peak(2000)
    assert large < 6 * small, (small, large)
    assert large < 40_000_000, large
