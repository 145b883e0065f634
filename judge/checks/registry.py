"""The one explicit list of checks rubrics may name.

Adding a check: write one module with a `Check` subclass and register an instance here (or, for a
plugin or a test, call `CHECKS.register(...)`); the rubric loader, the evidence builder, the embedded
judge and the LLM prompts all find it through this registry.
"""

from __future__ import annotations

from collections.abc import Iterator

from judge.checks.base import Check, UnknownCheckError
from judge.checks.claim_vs_diff.check import ClaimVsDiff
from judge.checks.design_variable.check import DesignVariableMatch
from judge.checks.execution.check import ExitStatus, ExpectedArtifacts
from judge.checks.integrity.check import INTEGRITY_CHECKS
from judge.checks.outcome_claim.check import OutcomeClaimSupported
from judge.checks.requirement.check import RequirementInDiff


class CheckRegistry:
    """Checks by name."""

    def __init__(self, checks: tuple[Check, ...] = ()) -> None:
        self._checks: dict[str, Check] = {}
        for check in checks:
            self.register(check)

    def register(self, check: Check) -> Check:
        """Add `check` under its name.

        Raises:
            ValueError: another check already has that name.
        """
        if check.name in self._checks:
            raise ValueError(f"a check named {check.name!r} is already registered")
        self._checks[check.name] = check
        return check

    def unregister(self, name: str) -> None:
        """Remove the check named `name` (tests and plugins that added one)."""
        self._checks.pop(name, None)

    def get(self, name: str, *, where: str = "check.name") -> Check:
        """The check named `name`.

        Raises:
            UnknownCheckError: no such check, naming the known ones.
        """
        check = self._checks.get(name)
        if check is None:
            raise UnknownCheckError(f"no check named {name!r} (known: {', '.join(sorted(self._checks))})",
                                    field=where)
        return check

    def __contains__(self, name: object) -> bool:
        return name in self._checks

    def __iter__(self) -> Iterator[Check]:
        return iter(sorted(self._checks.values(), key=lambda c: c.name))


CHECKS = CheckRegistry((
    DesignVariableMatch(),
    RequirementInDiff(),
    OutcomeClaimSupported(),
    ClaimVsDiff(),
    ExitStatus(),
    ExpectedArtifacts(),
    *INTEGRITY_CHECKS,
))
