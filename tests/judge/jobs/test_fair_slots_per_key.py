"""Issue 42: the grading slots are shared per API key within a tenant, and a tenant's keys share its bounds.

Each scenario runs FairSlots on an event loop with grades that hold their slot until a gate opens, and records
the order in which grades got a slot.
"""

from __future__ import annotations

import asyncio

import pytest

from judge.jobs import fair_slots
from judge.jobs.fair_slots import REFUSAL_WINDOW, FairSlots, SlotsBusyError


class Grades:
    """Grades of named keys that hold their slot until `gate` is set; `order` is who got a slot, in order."""

    def __init__(self, slots: FairSlots) -> None:
        self.slots = slots
        self.order: list[str] = []
        self.gate = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    async def _grade(self, key: str, tenant: str, cost: int, hold: bool) -> None:
        async with self.slots.slot(key, cost, tenant=tenant):
            self.order.append(key)
            if hold:
                await self.gate.wait()

    async def send(self, key: str, tenant: str, cost: int = 1, *, hold: bool = False) -> None:
        self.tasks.append(asyncio.create_task(self._grade(key, tenant, cost, hold)))
        await asyncio.sleep(0)  # it takes its slot or its place in the queue now

    async def finish(self) -> list[str]:
        self.gate.set()
        await asyncio.gather(*self.tasks)
        return self.order


def test_keys_of_one_tenant_take_turns() -> None:
    async def scenario() -> list[str]:
        grades = Grades(FairSlots(total=4, per_key=1, key_cost=100, key_queue=50, per_tenant=1))
        await grades.send("a1", "t", hold=True)
        for _ in range(3):
            await grades.send("a1", "t")
        await grades.send("a2", "t")  # queued after three of a1's
        assert grades.slots.snapshot() == {"a1": (1, 3), "a2": (0, 1)}
        return await grades.finish()

    # a2 takes the second turn of the tenant's one slot, not the fifth.
    assert asyncio.run(scenario()) == ["a1", "a1", "a2", "a1", "a1"]


def test_tenants_take_turns_then_their_keys() -> None:
    async def scenario() -> list[str]:
        grades = Grades(FairSlots(total=1, per_key=1, key_cost=100, key_queue=50))
        await grades.send("a1", "a", hold=True)
        for key, tenant in [("a1", "a"), ("a1", "a"), ("a2", "a"), ("a2", "a"), ("b1", "b"), ("b1", "b")]:
            await grades.send(key, tenant)
        return await grades.finish()

    # Tenant a's two keys together get every other turn, as tenant b's one key does; within a, a1 and a2 alternate.
    assert asyncio.run(scenario()) == ["a1", "a1", "b1", "a2", "b1", "a1", "a2"]


def test_a_key_holds_at_most_its_own_slots_and_another_key_of_its_tenant_runs() -> None:
    async def scenario() -> dict[str, tuple[int, int]]:
        grades = Grades(FairSlots(total=4, per_key=1, key_cost=100, key_queue=50, per_tenant=2))
        await grades.send("a1", "t", hold=True)
        await grades.send("a1", "t", hold=True)
        await grades.send("a2", "t", hold=True)
        await grades.send("a3", "t", hold=True)  # the tenant's two slots are taken
        seen = grades.slots.snapshot()
        await grades.finish()
        return seen

    assert asyncio.run(scenario()) == {"a1": (1, 1), "a2": (1, 0), "a3": (0, 1)}


def test_a_tenants_queue_is_shared_by_its_active_keys() -> None:
    async def scenario() -> tuple[str, str]:
        slots = FairSlots(total=1, per_key=1, key_cost=100, key_queue=10)
        grades = Grades(slots)
        await grades.send("a1", "t", hold=True)
        for _ in range(2):
            await grades.send("a1", "t", cost=5)  # alone, a1 may hold the tenant's whole queue: 10 leaves
        first = _refusal(slots, "a1")
        await grades.send("a2", "t", cost=5)  # a2 is not refused: a key's first grade may always wait
        with pytest.raises(SlotsBusyError):  # its part is 10 leaves / 2 keys: a second grade passes it
            async with slots.slot("a2", 5, tenant="t"):
                pass
        slots.check_room("b1")  # another tenant's key is not refused
        second = _refusal(slots, "a2")
        await grades.finish()
        return first, second

    first, second = asyncio.run(scenario())
    assert "2 waiting" in first and "1 waiting" in second


def test_check_room_refuses_by_key_within_a_tenant() -> None:
    async def scenario() -> None:
        slots = FairSlots(total=1, per_key=1, key_cost=100, key_queue=4)
        grades = Grades(slots)
        await grades.send("a1", "t", hold=True)
        await grades.send("a1", "t", cost=4)
        with pytest.raises(SlotsBusyError) as busy:
            slots.check_room("a1")  # from the key alone: its waiting grades fill its tenant's queue
        assert busy.value.retry_after >= 1
        slots.check_room("a2")  # the same tenant's other key: it has no grade waiting, it may queue one
        slots.check_room("unknown")
        await grades.finish()
        assert slots.snapshot() == {}  # every key forgotten once idle
        slots.check_room("a1")

    asyncio.run(scenario())


def test_refusals_as_too_costly_count_per_key() -> None:
    slots = FairSlots(total=2, per_key=1, key_cost=100, key_queue=5, refusals=2)
    for _ in range(2):
        slots.note_refused("a1")
    with pytest.raises(SlotsBusyError):
        slots.check_room("a1")
    slots.check_room("a2")  # another key, of the same tenant or not: nothing tells them apart here


def test_a_key_that_keeps_sending_while_refused_stays_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(fair_slots.time, "monotonic", lambda: clock[0])
    slots = FairSlots(total=2, per_key=1, key_cost=100, key_queue=5, refusals=2)
    for key in ("careless", "patient"):
        slots.note_refused(key)
        slots.note_refused(key)
    for _ in range(int(REFUSAL_WINDOW) * 2 + 1):  # careless re-sends every half second; patient waits
        clock[0] += 0.5
        with pytest.raises(SlotsBusyError) as busy:
            slots.check_room("careless")
        assert busy.value.retry_after >= REFUSAL_WINDOW - 1
    slots.check_room("patient")  # its refusals are older than the window: it is priced again
    with pytest.raises(SlotsBusyError):
        slots.check_room("careless")  # never waited: still refused
    clock[0] += REFUSAL_WINDOW + 0.1  # once it waits Retry-After, it is priced again
    slots.check_room("careless")


def test_a_keys_requests_are_priced_one_at_a_time_and_other_keys_are_not_kept_waiting() -> None:
    async def scenario() -> list[str]:
        slots = FairSlots(total=2, per_key=1, key_cost=100, key_queue=5)
        events: list[str] = []
        release = asyncio.Event()

        async def price(key: str, name: str, hold: bool = False) -> None:
            async with slots.pricing_turn(key):
                events.append(f"start {name}")
                if hold:
                    await release.wait()
                events.append(f"end {name}")

        first = asyncio.create_task(price("a", "a1", hold=True))
        second = asyncio.create_task(price("a", "a2"))
        await asyncio.sleep(0)
        await price("b", "b1")  # another key is priced while a's first is
        release.set()
        await asyncio.gather(first, second)
        assert not slots._pricing  # nothing is held for an idle key
        return events

    assert asyncio.run(scenario()) == ["start a1", "start b1", "end b1", "end a1", "start a2", "end a2"]


def test_a_cancelled_waiter_gives_its_turn_to_the_next() -> None:
    async def scenario() -> list[str]:
        grades = Grades(FairSlots(total=1, per_key=1, key_cost=100, key_queue=50, per_tenant=1))
        await grades.send("a1", "t", hold=True)
        await grades.send("a2", "t")
        await grades.send("a3", "t")
        grades.tasks[1].cancel()  # a2's client went away while it waited
        await asyncio.sleep(0)
        grades.tasks.pop(1)
        assert grades.slots.snapshot() == {"a1": (1, 0), "a3": (0, 1)}
        return await grades.finish()

    assert asyncio.run(scenario()) == ["a1", "a3"]


def _refusal(slots: FairSlots, key: str) -> str:
    try:
        slots.check_room(key)
    except SlotsBusyError as busy:
        return str(busy)
    raise AssertionError(f"{key} was not refused")


def test_a_request_cancelled_while_waiting_for_its_pricing_turn_holds_nothing() -> None:
    async def scenario() -> None:
        slots = FairSlots(total=2, per_key=1, key_cost=100, key_queue=5)
        give_back = await slots.take_pricing_turn("a")
        waiting = asyncio.create_task(slots.take_pricing_turn("a"))
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        give_back()
        give_back()  # a second call gives nothing back twice
        assert not slots._pricing
        again = await asyncio.wait_for(slots.take_pricing_turn("a"), 1)  # the turn is free
        again()

    asyncio.run(scenario())
