"""The deciding words of near-identical requirements, and whether evidence holds them."""

from __future__ import annotations

from judge.submission.code_units import executable_text, units_from_diff
from judge.submission.diff import parse_diff
from judge.submission.distinguishing import (
    check_distinguishing,
    distinguishing_terms,
    evidence_terms,
    missing_names,
    name_terms,
    requirement_terms,
)
from tests.judge.submission.code_fixtures import added_file

RUBRIC = [
    "Step 1: Train SAC on the Sparse Hopper environment for 1M steps",
    "Step 2: Train SAC on the Hopper environment for 1M steps",
    "Step 3: Train SAC on the Sparse Walker environment for 1M steps",
    "Step 4: Train SAC on the Hopper environment for 1M steps",
    "Step 5: Plot the learning curves of all runs",
]
DENSE_RUN = 'env = gym.make("Hopper-v4")\nagent = SAC(env)\nagent.learn(total_timesteps=1_000_000)\n'
SPARSE_RUN = 'env = make_env("SparseHopper-v1")\nagent = SAC(env)\nagent.learn(total_timesteps=1_000_000)\n'


def test_siblings_differ_by_their_deciding_words_and_step_numbers_do_not_count() -> None:
    sparse_hopper, hopper, sparse_walker, hopper_again, plot = distinguishing_terms(RUBRIC)
    assert sparse_hopper.terms == {"spars", "hopper"}
    assert {c.sibling: c.own for c in sparse_hopper.contrasts} == {1: {"spars"}, 2: {"hopper"}, 3: {"spars"}}
    assert hopper.terms == {"hopper"} and hopper.identical_to == (3,)
    assert hopper_again.identical_to == (1,)
    assert {c.sibling: c.sibling_own for c in sparse_walker.contrasts}[0] == {"hopper"}
    assert plot.terms == frozenset() and plot.contrasts == ()
    assert requirement_terms("Step 7: Train SAC") == {"train", "sac"}  # the list marker is layout


def test_a_dense_run_does_not_distinguish_the_sparse_requirement() -> None:
    sparse_hopper = distinguishing_terms(RUBRIC)[0]
    check = check_distinguishing(DENSE_RUN, sparse_hopper)
    assert not check.distinguishes
    assert check.missing == {"spars"} and check.present == {"hopper"}
    assert check.unmet_siblings == (1, 3)
    assert check_distinguishing(SPARSE_RUN, sparse_hopper).distinguishes  # SparseHopper is split


def test_evidence_of_the_more_specific_sibling_points_to_it() -> None:
    hopper = distinguishing_terms(RUBRIC)[1]
    sparse = check_distinguishing(SPARSE_RUN, hopper)
    assert sparse.distinguishes and sparse.points_to_siblings == (0,)
    dense = check_distinguishing(DENSE_RUN, hopper)
    assert dense.distinguishes and dense.points_to_siblings == ()
    walker = check_distinguishing('env = make_env("SparseWalker2d-v1")', hopper)
    assert walker.unmet_siblings == (2,) and walker.points_to_siblings == (0, 2)


def test_identical_requirements_have_nothing_to_tell_apart_and_share_evidence() -> None:
    twins = distinguishing_terms(["Normalise the observations", "Normalise the observations."])
    assert [d.terms for d in twins] == [frozenset(), frozenset()]
    assert twins[0].identical_to == (1,)
    assert check_distinguishing("obs = normalise(obs)", twins[0]).distinguishes


def test_numbers_and_names_distinguish_and_match_code_spellings() -> None:
    rubric = ["Set the learning rate to 0.001 for the ResNet-50 encoder",
              "Set the learning rate to 0.0003 for the ResNet-50 encoder"]
    first, second = distinguishing_terms(rubric)
    assert first.terms == {"0.001"} and second.terms == {"0.0003"}
    assert check_distinguishing("encoder = resnet50()\nopt = Adam(lr=1e-3)", first).distinguishes
    assert not check_distinguishing("encoder = resnet50()\nopt = Adam(lr=1e-3)", second).distinguishes


def test_near_identical_is_a_threshold_on_shared_terms() -> None:
    rubric = ["Evaluate the policy on Hopper", "Evaluate the policy on Walker", "Save checkpoints every epoch"]
    assert [len(d.contrasts) for d in distinguishing_terms(rubric)] == [1, 1, 0]
    assert [len(d.contrasts) for d in distinguishing_terms(rubric, min_similarity=0.9)] == [0, 0, 0]


def test_the_names_a_requirement_mentions_are_checked_with_identifier_splitting() -> None:
    requirement = "Pretrain with SAC on HalfCheetah-v4, then compute the Jensen-Shannon divergence (JSD)"
    assert name_terms(requirement) == {"sac", "halfcheetah", "halfcheetahv4", "jsd"}
    ppo_script = "agent = PPO(make_env('HalfCheetah-v4'))\njsd = jensenshannon(p, q)\n"
    assert missing_names(ppo_script, requirement) == {"sac"}
    sac_script = "agent = SAC(make_env('half_cheetah_v4'))\njsd_value = js(p, q)\n"
    assert missing_names(sac_script, requirement) == frozenset()  # half_cheetah_v4 spells HalfCheetah-v4
    hopper_script = "agent = SAC(make_env('Hopper-v4'))\njsd_value = js(p, q)\n"
    assert missing_names(hopper_script, requirement) == {"halfcheetah", "halfcheetahv4"}
    assert evidence_terms(["from scipy.spatial.distance import jensenshannon"]).has("jensen")
    assert not evidence_terms(["isaac_gym = 1"]).has("sac")  # short names must match whole words


def test_deciding_words_only_in_a_comment_do_not_count_when_the_executable_text_is_checked() -> None:
    code = "# Train on the sparse Hopper task\nenv = gym.make('Hopper-v4')\n"
    unit = units_from_diff(parse_diff(added_file("train.py", code)))[0]
    sparse_hopper = distinguishing_terms(RUBRIC)[0]
    assert check_distinguishing(unit.text, sparse_hopper).distinguishes
    assert not check_distinguishing(executable_text(unit) + "\n" + unit.file_path, sparse_hopper).distinguishes
