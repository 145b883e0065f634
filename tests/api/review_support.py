"""The service app in-process (TestClient) for the review tests, and grades made to order, hostile text included."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from fastapi.testclient import TestClient

from api.app import create_app
from judge.devtools.local_services import scratch_database
from judge.grading.grader import fingerprint_for
from judge.judges.embedded import EmbeddedJudge
from judge.models import EvidenceQuote, ExpBenchMetrics, Grade, JudgeFingerprint, LeafResult, StageScore
from judge.rubric_loader import load_rubric
from judge.settings import Settings
from judge.store import ItemOutcome, Store
from judge.store.review_records import Role
from tests.html_injection import PAYLOADS

T = TypeVar("T")
# Characters that must never reach a page as themselves: NUL, ESC, a bidi override, a zero-width joiner of bidi.
CONTROL = "\x00\x1b[31m\u202e\u2066"
HOSTILE = " ".join(PAYLOADS) + " " + CONTROL
# What text columns can hold on PostgreSQL too (no NUL); JSON-only fields get all of HOSTILE.
COLUMN_SAFE = HOSTILE.replace("\x00", "")
DIFF = """diff --git a/train.py b/train.py
--- a/train.py
+++ b/train.py
@@ -10,4 +10,6 @@ def main():
     args = parse()
-    model = build(args)
+    model = load_checkpoint(args.ckpt)  # <script>alert(1)</script>
+    model.eval()
     run(model)
     report()
"""


@dataclass
class ReviewApp:
    """The app under a TestClient, its store (driven on the app's event loop) and keys made for it."""

    client: TestClient
    store: Store
    keys: dict[str, str] = field(default_factory=dict)

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Run a store coroutine on the app's loop."""
        portal = self.client.portal
        assert portal is not None
        return portal.call(lambda: fn(*args, **kwargs))

    def key(self, tenant: str, role: Role, name: str | None = None) -> str:
        """A fresh key (remembered as keys[name or role + tenant])."""
        _record, secret = self.call(self.store.api_keys.create, tenant, name, role)
        self.keys[name or f"{role}-{tenant}"] = secret
        return secret

    def login(self, secret: str) -> TestClient:
        """Log the client in with `secret` (a fresh cookie jar first); the session's CSRF token is returned in
        the client's `csrf` attribute."""
        self.client.cookies.clear()
        form = self.client.get("/review/login")
        token = re.search(r'name="login_token" value="([^"]+)"', form.text)
        assert token is not None, form.text
        response = self.client.post("/review/login", data={"api_key": secret, "login_token": token.group(1)},
                                    follow_redirects=False)
        assert response.status_code == 303, response.text
        page = self.client.get("/review/grades")
        csrf = re.search(r'<meta name="csrf-token" content="([^"]+)"', page.text)
        assert csrf is not None
        self.client.csrf = csrf.group(1)  # type: ignore[attr-defined]
        return self.client

    def save(self, tenant: str, grade: Grade, submission: dict[str, Any] | None = None,
             task: dict[str, Any] | None = None) -> Grade:
        """Store `grade` for `tenant`; with `submission` (and `task`), through a job that keeps them (as
        POST /v1/grade does)."""
        job_id = None
        if submission is not None:
            job_id = uuid.uuid4().hex
            payload = {"rubric": "expbench-v1", "items": [{"task": task or {"task_id": grade.task_id},
                                                           "submission": submission}]}
            self.call(self.store.jobs.create, tenant=tenant, kind="grade", payload_json=json.dumps(payload),
                      total=1, request_hash=uuid.uuid4().hex, job_id=job_id)
        self.call(self.store.grades.save, tenant, f"run-{uuid.uuid4().hex}", grade, job_id=job_id)
        if job_id is not None:
            self.call(self.store.jobs.record_item, job_id, 0, ItemOutcome(state="done", grade_id=grade.grade_id))
        return grade


_FINGERPRINT: list[JudgeFingerprint] = []


def fingerprint() -> JudgeFingerprint:
    """The embedded judge's fingerprint under expbench-v1 (built once)."""
    if not _FINGERPRINT:
        _FINGERPRINT.append(fingerprint_for(load_rubric("expbench-v1"), EmbeddedJudge()))
    return _FINGERPRINT[0]


def leaf(leaf_id: str, stage: str, verdict: str, *, text: str = "", evidence: list[EvidenceQuote] | None = None,
         confidence: float | None = 0.8, template: str | None = None) -> LeafResult:
    """A leaf whose every free-text field carries `text`."""
    return LeafResult(
        leaf_id=leaf_id, template_id=template or leaf_id.split(".")[0], stage=stage,  # type: ignore[arg-type]
        title=f"Leaf {leaf_id} {text}", target=f"target {text}", verdict=verdict,  # type: ignore[arg-type]
        score=None if verdict == "unscored" else {"pass": 1.0, "partial": 0.5}.get(verdict, 0.0),
        reason_code="judge_error" if verdict == "unscored" else None, reason=f"reason {text}" if text else None,
        rationale=f"rationale {text}", evidence=evidence or [],
        confidence=None if verdict == "unscored" else confidence,
        votes={verdict: 1} if verdict != "unscored" else {}, flags=[f"flag {text}"] if text else [],
        error_labels=[f"error {text}"] if text else [], judge="embedded",
    )


def review_grade(*, text: str = "", task_id: str = "93022:0", agent: str = "curie", n_extra: int = 0) -> Grade:
    """A grade with a diff-evidenced requirement, a design item, an unverified conclusion quote, an unscored leaf."""
    leaves = [
        leaf("requirement.0", "implementation", "pass", text=text, evidence=[EvidenceQuote(
            source="diff", text=f"+    model = load_checkpoint(args.ckpt)  # {PAYLOADS[0]}\n+    model.eval()",
            location="train.py @@ -10,4 +10,6 @@ def main():", verified=True, similarity=0.71)]),
        leaf("requirement.1", "implementation", "fail", text=text, confidence=0.55).model_copy(update={
            "compared": [EvidenceQuote(source="diff", text=f"model = load_checkpoint(args.ckpt)  # {text}",
                                       location="train.py:11-12 (block)", verified=True, similarity=0.31)]}),
        leaf("design_variable.0", "design", "pass", text=text, evidence=[EvidenceQuote(
            source="design", text=f"Independent variable: learning rate {text}", location="design item 1",
            verified=True, similarity=0.8)]),
        leaf("outcome_claim.0", "conclusion", "partial", text=text, confidence=0.3, evidence=[EvidenceQuote(
            source="conclusion", text=f"We beat the baseline {text}", location="sentence 2", verified=False)]),
        leaf("design_variable.1", "design", "fail", text=text, confidence=0.6).model_copy(update={
            "compared": [EvidenceQuote(source="design", text=f"Dependent variable: accuracy {text}",
                                       location="design item 2", verified=True, similarity=0.42)]}),
        leaf("ran_to_completion", "execution", "unscored", text=text),
        *(leaf(f"requirement.{i + 2}", "implementation", "fail", text=text, confidence=0.9) for i in range(n_extra)),
    ]
    return Grade(
        task_id=task_id, submission_id=f"sub-{uuid.uuid4().hex[:8]} {text.replace(chr(0), '')}".strip(),
        agent=agent, run_id=f"run {text.replace(chr(0), '')}", task_hash=uuid.uuid4().hex * 2,
        submission_hash=uuid.uuid4().hex * 2,
        fingerprint=fingerprint(), leaves=leaves,
        stages=[StageScore(stage="implementation", score=50.0, leaves_total=2, leaves_scored=2, leaves_passed=1)],
        overall_score=50.0,
        metrics=ExpBenchMetrics(D=100.0, I=50.0, E=None, C=False, design_correct=True, implementation_correct=False,
                                all_correct=False, all_correct_executed=None, thresholds={"design_correct_at": 70.0}),
        error_labels=[f"taxonomy {text}"] if text else [], integrity_flags=[f"integrity {text}"] if text else [],
        warnings=[f"warning {text}"] if text else [],
    )


def serve_review_app(database: str, folder: Path) -> Iterator[ReviewApp]:
    """The app with auth on, over a fresh SQLite file in `folder` or a scratch PostgreSQL database."""
    sqlite_url = f"sqlite+aiosqlite:///{folder / 'store.db'}"
    with scratch_database() if database == "postgres" else nullcontext(sqlite_url) as url:
        settings = Settings(database_url=url, auth_enabled=True, rubrics_dir=Path("rubrics").resolve())
        with TestClient(create_app(settings), base_url="http://testserver") as client:
            yield ReviewApp(client, client.app.state.service.store)  # type: ignore[attr-defined]


def tenant() -> str:
    """A tenant of its own for one test."""
    return f"lab-{uuid.uuid4().hex[:8]}"
