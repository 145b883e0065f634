"""A large grade's review page a page of leaves at a time: failed and disagreed first, filtered, linked by leaf."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from api.review.leaf_paging import PAGE_LEAVES
from api.review.pages import PANEL_LIST_CAP
from judge.devtools.synthetic_grades import big_diff, big_grade
from tests.api.review_support import ReviewApp, fingerprint, serve_review_app, tenant

LEAVES = 230  # five pages: about a third each failed, partial and passed, in every stage


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReviewApp]:
    yield from serve_review_app("sqlite", tmp_path_factory.mktemp("review-pages"))


def shown(text: str) -> list[str]:
    return re.findall(r'<section class="leaf [^"]*" id="leaf-([^"]+)"', text)


def verdicts(text: str) -> list[str]:
    return re.findall(r'<span class="verdict v-(\w+)" title="the judge', text)


def test_a_large_grade_opens_a_page_of_leaves_failed_and_disagreed_first(app: ReviewApp) -> None:
    owner = tenant()
    grade = big_grade(LEAVES, fingerprint())
    requirements = [f"Requirement {i}: do thing {i}" for i in range(LEAVES)]
    app.save(owner, grade, {"submission_id": grade.submission_id, "task_id": grade.task_id,
                            "diff": big_diff(LEAVES)}, {"task_id": grade.task_id, "requirements": requirements})
    ann = app.key(owner, "reviewer", "ann")
    passed = next(leaf.leaf_id for leaf in grade.leaves if leaf.verdict == "pass" and leaf.stage == "conclusion")
    app.client.put(f"/v1/grades/{grade.grade_id}/leaves/{passed}/label", json={"label": "fail"},
                   headers={"X-API-Key": ann})
    client = app.login(ann)
    url = f"/review/grades/{grade.grade_id}"

    first = client.get(url)
    assert first.status_code == 200
    ids = shown(first.text)
    assert len(ids) == PAGE_LEAVES and ids[0] == passed  # the leaf ann's label disagrees on, then the failures
    assert verdicts(first.text)[1:] == ["fail"] * (PAGE_LEAVES - 1)
    assert f"leaves 1–{PAGE_LEAVES} of {LEAVES}" in first.text and "page 1 of 5" in first.text
    assert f'data-next-page="{url}?page=2"' in first.text and 'data-prev-page=""' in first.text
    assert "<kbd>]</kbd>" in first.text and "next page of leaves" in first.text  # the keys, documented
    # The task panel lists the first PANEL_LIST_CAP requirements, not thousands (each is a leaf, paged).
    assert f"Requirements ({LEAVES})" in first.text and "Requirement 199: do thing 199" in first.text
    assert "Requirement 200:" not in first.text and f"… and {LEAVES - PANEL_LIST_CAP} more" in first.text

    pages = [shown(client.get(f"{url}?page={n}").text) for n in range(2, 6)]
    every = ids + [leaf for page in pages for leaf in page]
    assert sorted(every) == sorted(leaf.leaf_id for leaf in grade.leaves) and len(pages[-1]) == LEAVES - 4 * 50
    last = client.get(f"{url}?page=5").text
    assert set(verdicts(last)) == {"pass"} and 'data-next-page=""' in last

    # Filters by stage and verdict, kept by the pager; rubric order on request.
    design_passes = client.get(f"{url}?stage=design&verdict=pass").text
    expected = [leaf.leaf_id for leaf in grade.leaves if leaf.stage == "design" and leaf.verdict == "pass"]
    assert shown(design_passes) == expected[:PAGE_LEAVES] and len(expected) < PAGE_LEAVES
    assert shown(client.get(f"{url}?verdict=disagreed").text) == [passed]
    rubric = client.get(f"{url}?order=rubric&page=2").text
    second = grade.leaves[PAGE_LEAVES:2 * PAGE_LEAVES]  # shown grouped by stage, in rubric order within each
    assert shown(rubric) == [leaf.leaf_id for stage in dict.fromkeys(one.stage for one in second) for leaf in second
                             if leaf.stage == stage]
    assert f"{url}?order=rubric&amp;page=3" in rubric

    # A leaf named in the URL opens the page holding it (links from the queue and the history page do so).
    tail = grade.leaves[-1].leaf_id  # a pass: on the last page in attention order
    assert tail in shown(client.get(f"{url}?leaf={tail}").text)
    assert f"?leaf={tail}#leaf-{tail}" in client.get(f"{url}/leaves/{tail}/history").text

    # Bad filters are refused naming the parameter; nothing is shown for them.
    for bad, field in (("verdict=maybe", "verdict"), ("stage=nowhere", "stage"), ("page=6", "page"),
                       ("leaf=no.such", "leaf")):
        refused = client.get(f"{url}?{bad}")
        assert refused.status_code == 400 and f"{field}:" in refused.text, (bad, refused.text[:300])


def test_labelling_without_script_returns_to_the_same_page_of_leaves(app: ReviewApp) -> None:
    owner = tenant()
    grade = big_grade(LEAVES, fingerprint())
    app.save(owner, grade)
    client = app.login(app.key(owner, "reviewer", "bob"))
    url = f"/review/grades/{grade.grade_id}"
    page = client.get(f"{url}?stage=design&page=2").text
    leaf = shown(page)[0]
    back = re.search(rf'id="leaf-{re.escape(leaf)}".*?name="back" value="([^"]+)"', page, re.S)
    assert back is not None and back.group(1) == f"{url}?stage=design&amp;page=2#leaf-{leaf}"
    answer = client.post(f"{url}/leaves/{leaf}/label", data={"label": "pass", "csrf_token": client.csrf,  # type: ignore[attr-defined]
                                                            "back": back.group(1).replace("&amp;", "&")},
                         follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == f"{url}?stage=design&page=2#leaf-{leaf}"
