"""A bounded pool of grading slots that tenants, and the API keys of each tenant, share fairly; and the
per-tenant share of LLM upstream calls.

Without it every synchronous grade ran as soon as it arrived: three large grades of one key took the
machine and a normal grade of another key waited 92 s for an answer it gets in 0.3 s alone. Here a grade
first takes a slot. At most `total` grades run at once; one tenant's at most `per_tenant` of them and
together at most `tenant_cost` leaves (a larger grade runs alone); one API key's at most `per_key` of its
tenant's. The others wait, and when a slot frees the tenants with waiting grades take turns, and within a
tenant its keys take turns (round robin, not first come first served: a key that queued ten grades gets
the next slot only when its turn comes, so a tenant's runaway harness cannot starve the same tenant's
other keys). The tenant's queue, `tenant_queue` leaves of waiting grades, is shared by its keys that have
grades running or waiting, in equal parts; a key whose waiting grades would pass its part is refused at once
(`SlotsBusyError`, with the seconds after which a retry likely finds room): the queue is bounded by cost, so
a harness with 50 small grades in flight waits its turn while a key queueing large grades is refused after
a few. `check_room` answers the same question from the key alone, before its request is read
(api/middleware.py `FairShareGate`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from judge.errors import ExpjudgeError

# Retry-After of a busy key: its mean grade time times its turns to wait, within these bounds.
MIN_RETRY_AFTER = 1
MAX_RETRY_AFTER = 120
# The window over which a key's requests refused as too costly are counted (`FairSlots.refusals`).
REFUSAL_WINDOW = 10.0


class SlotsBusyError(ExpjudgeError):
    """A key already has as many grades (leaves) waiting as it may; `retry_after` seconds is when to try again."""

    def __init__(self, key: str, running: int, waiting: int, retry_after: int, *, reason: str | None = None) -> None:
        said = reason or f"this key has {running} grade(s) running and {waiting} waiting, its share of the service"
        super().__init__(f"{said}; retry after {retry_after} s or send large work to POST /v1/grade?mode=async")
        self.key = key
        self.retry_after = retry_after


@dataclass
class _Waiter:
    cost: int
    granted: asyncio.Future[None]


@dataclass
class _KeyState:
    tenant: str
    running: int = 0
    waiting_cost: int = 0
    waiting: deque[_Waiter] = field(default_factory=deque)
    mean_seconds: float = 1.0  # a moving mean of this key's grade time (seeds Retry-After)


@dataclass
class _TenantState:
    running: int = 0
    cost: int = 0
    keys: set[str] = field(default_factory=set)  # its keys with grades running or waiting
    turns: OrderedDict[str, None] = field(default_factory=OrderedDict)  # its keys with waiting grades, next first


class FairSlots:
    """Grading slots shared fairly between tenants and between the keys of a tenant; see the module's docstring.

    Args:
        total: Grades running at once.
        per_key: Of which one API key's at most.
        key_cost: Cost (leaves) one tenant's running grades hold at most together; a grade costing more runs
            alone.
        key_queue: Leaves of one tenant's waiting grades at most, shared by its active keys in equal parts; a grade
            that would pass its key's part is refused with `SlotsBusyError` (one grade of a key may wait alone
            whatever its cost).
        refusals: Requests of one key refused as too costly within `REFUSAL_WINDOW` seconds before its further
            requests are refused unpriced (429).
        per_tenant: Grades of one tenant's keys running at once (default: `per_key`).
    """

    def __init__(self, total: int, per_key: int, key_cost: int, key_queue: int, refusals: int = 10,
                 per_tenant: int | None = None) -> None:
        self.total = total
        self.per_tenant = min(per_tenant if per_tenant is not None else per_key, total)
        self.per_key = min(per_key, self.per_tenant)
        self.key_cost = key_cost
        self.key_queue = key_queue
        self.refusals = refusals
        self._refused: dict[str, deque[float]] = {}
        self._pricing: dict[str, list[Any]] = {}  # key -> [its pricing lock, requests holding or waiting for it]
        self._running = 0
        self._keys: dict[str, _KeyState] = {}
        self._tenants: dict[str, _TenantState] = {}
        self._turns: OrderedDict[str, None] = OrderedDict()  # tenants with waiting grades, next turn first

    def _fits(self, state: _KeyState, cost: int) -> bool:
        tenant = self._tenants[state.tenant]
        if self._running >= self.total or tenant.running >= self.per_tenant or state.running >= self.per_key:
            return False
        return tenant.running == 0 or tenant.cost + cost <= self.key_cost

    def _take(self, state: _KeyState, cost: int) -> None:
        tenant = self._tenants[state.tenant]
        self._running += 1
        state.running += 1
        tenant.running += 1
        tenant.cost += cost

    def _queue_share(self, state: _KeyState, key: str) -> float:
        """The leaves of waiting grades `key` may hold: its tenant's queue over the tenant's active keys."""
        active = self._tenants[state.tenant].keys | {key}
        return self.key_queue / len(active)

    def _retry_after(self, state: _KeyState) -> int:
        turns = (len(state.waiting) + state.running) / self.per_key
        return max(MIN_RETRY_AFTER, min(MAX_RETRY_AFTER, math.ceil(state.mean_seconds * turns)))

    def _grant_in(self, tenant_name: str) -> bool:
        """Grant a slot to the first of `tenant_name`'s keys, in turn, whose next grade fits."""
        tenant = self._tenants[tenant_name]
        for key in list(tenant.turns):
            state = self._keys[key]
            head = state.waiting[0]
            if not self._fits(state, head.cost):
                continue
            state.waiting.popleft()
            state.waiting_cost -= head.cost
            self._take(state, head.cost)
            head.granted.set_result(None)
            del tenant.turns[key]
            if state.waiting:
                tenant.turns[key] = None  # its next grade goes to the back of its tenant's turns
            return True
        return False

    def _dispatch(self) -> None:
        """Grant free slots to waiting grades, the tenants taking turns and, within each, its keys."""
        progressed = True
        while progressed and self._turns and self._running < self.total:
            progressed = False
            for tenant_name in list(self._turns):
                if not self._grant_in(tenant_name):
                    continue
                del self._turns[tenant_name]
                if self._tenants[tenant_name].turns:
                    self._turns[tenant_name] = None  # its next grade goes to the back of the turns
                progressed = True
                break

    def _forget_if_idle(self, key: str) -> None:
        """An idle key holds nothing (a fresh one starts from the default mean), nor does an idle tenant."""
        state = self._keys.get(key)
        if state is None or state.running or state.waiting:
            return
        del self._keys[key]
        tenant = self._tenants[state.tenant]
        tenant.keys.discard(key)
        if not tenant.keys:
            del self._tenants[state.tenant]

    def _release(self, key: str, cost: int, seconds: float) -> None:
        state = self._keys[key]
        tenant = self._tenants[state.tenant]
        self._running -= 1
        state.running -= 1
        tenant.running -= 1
        tenant.cost -= cost
        state.mean_seconds = 0.7 * state.mean_seconds + 0.3 * seconds
        self._dispatch()
        self._forget_if_idle(key)

    def _state(self, key: str, tenant: str) -> _KeyState:
        state = self._keys.get(key)
        if state is None:
            state = self._keys[key] = _KeyState(tenant)
        self._tenants.setdefault(state.tenant, _TenantState()).keys.add(key)
        return state

    async def _acquire(self, key: str, tenant: str, cost: int) -> None:
        if (state := self._keys.get(key)) is not None and state.waiting \
                and state.waiting_cost + cost > self._queue_share(state, key):
            raise SlotsBusyError(key, state.running, len(state.waiting), self._retry_after(state))
        state = self._state(key, tenant)
        if not state.waiting and not self._turns and self._fits(state, cost):
            self._take(state, cost)
            return
        waiter = _Waiter(cost, asyncio.get_running_loop().create_future())
        state.waiting.append(waiter)
        state.waiting_cost += cost
        self._tenants[state.tenant].turns.setdefault(key, None)
        self._turns.setdefault(state.tenant, None)
        self._dispatch()
        try:
            await waiter.granted
        except asyncio.CancelledError:  # the client went away: give the slot back, or the place in the queue
            if waiter.granted.done() and not waiter.granted.cancelled():
                self._release(key, cost, 0.0)
            else:
                self._leave_queue(key, waiter)
            raise

    def _leave_queue(self, key: str, waiter: _Waiter) -> None:
        state = self._keys[key]
        state.waiting.remove(waiter)
        state.waiting_cost -= waiter.cost
        tenant = self._tenants[state.tenant]
        if not state.waiting:
            tenant.turns.pop(key, None)
            if not tenant.turns:
                self._turns.pop(state.tenant, None)
        self._dispatch()  # a grade behind this one may fit now
        self._forget_if_idle(key)

    async def take_pricing_turn(self, key: str) -> Callable[[], None]:
        """Wait for `key`'s turn to have a request read and priced (one at a time per key; other keys are not kept
        waiting); returns the function that gives the turn back (calling it again does nothing).

        Twelve oversized requests of one key arriving at once were read and priced side by side: the other keys'
        grades shared the interpreter with all twelve. One at a time, the `refusals` that refuse a key unread are
        reached after as many pricings, and the requests behind them are refused unread (api/middleware.py).
        """
        entry = self._pricing.get(key)
        if entry is None:
            entry = self._pricing[key] = [asyncio.Lock(), 0]
        lock: asyncio.Lock = entry[0]
        entry[1] += 1

        def leave() -> None:
            entry[1] -= 1
            if not entry[1]:
                del self._pricing[key]  # an idle key holds no lock

        try:
            await lock.acquire()
        except BaseException:  # cancelled while waiting: it never held the turn
            leave()
            raise
        held = True

        def give_back() -> None:
            nonlocal held
            if held:
                held = False
                lock.release()
                leave()

        return give_back

    @contextlib.asynccontextmanager
    async def pricing_turn(self, key: str) -> AsyncIterator[None]:
        """Hold `key`'s turn to have a request priced while the block runs (see `take_pricing_turn`)."""
        give_back = await self.take_pricing_turn(key)
        try:
            yield
        finally:
            give_back()

    def note_refused(self, key: str) -> None:
        """Count a request of `key` refused as too costly: pricing it cost the service some work."""
        self._refused.setdefault(key, deque(maxlen=self.refusals)).append(time.monotonic())

    def check_room(self, key: str) -> None:
        """Refuse at once a key whose part of its tenant's queue is full, or that had `refusals` requests refused as
        too costly in the last `REFUSAL_WINDOW` seconds: from the key alone, so before its request is read (a
        client re-sending oversized grades would otherwise keep the service reading and parsing them). A request
        refused for its refusals counts as one more: a client that keeps sending without waiting Retry-After stays
        refused, unread, until it waits; one that waits is priced again.

        Raises:
            SlotsBusyError: `key`'s waiting grades hold its part of the queue already, or it is over its refusals.
        """
        refused = self._refused.get(key)
        if refused:
            now = time.monotonic()
            while refused and refused[0] < now - REFUSAL_WINDOW:
                refused.popleft()
            if len(refused) >= self.refusals:
                refused.append(now)  # it did not wait: its window starts again (the oldest refusal drops out)
                retry = max(MIN_RETRY_AFTER, math.ceil(refused[0] + REFUSAL_WINDOW - now))
                raise SlotsBusyError(key, 0, 0, retry, reason=f"{len(refused)} requests refused as too costly "
                                     f"(or sent while refused) in the last {REFUSAL_WINDOW:.0f} s")
            if not refused:
                del self._refused[key]
        state = self._keys.get(key)
        if state is not None and state.waiting and state.waiting_cost >= self._queue_share(state, key):
            raise SlotsBusyError(key, state.running, len(state.waiting), self._retry_after(state))

    @contextlib.asynccontextmanager
    async def slot(self, key: str, cost: int, tenant: str | None = None) -> AsyncIterator[None]:
        """Hold a slot for `key`'s grade of `cost` leaves while the block runs (waiting for one if need be).

        Args:
            key: The API key (or any stable name of it) the grade is sent with.
            cost: The grade's leaves.
            tenant: The key's tenant (default: the key is a tenant of its own).

        Raises:
            SlotsBusyError: `key`'s waiting grades and this one would pass its part of its tenant's queue.
        """
        await self._acquire(key, tenant if tenant is not None else key, cost)
        started = time.perf_counter()
        try:
            yield
        finally:
            self._release(key, cost, time.perf_counter() - started)

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """Each key's (running, waiting) grades, for metrics and tests."""
        return {key: (state.running, len(state.waiting)) for key, state in self._keys.items()}


# The tenant whose grade is running in this task (set by the runtime around a grade; read by `UpstreamShare`).
CURRENT_TENANT: ContextVar[str | None] = ContextVar("expjudge_current_tenant", default=None)


class UpstreamShare:
    """LLM calls in flight at once per tenant, over every grade and job of this process.

    A judge's own `max_concurrency` bounds the calls of one grade; a tenant sending many grades at once
    would still hold every upstream connection. `completion` wraps the function that sends each call.

    Args:
        per_key: Calls in flight at once for one tenant.
        send: The completion function to wrap (default: litellm.acompletion, imported on the first call).
    """

    def __init__(self, per_key: int, send: Callable[..., Awaitable[Any]] | None = None) -> None:
        self.per_key = per_key
        self._send = send
        self._semaphores: dict[tuple[int, str], asyncio.Semaphore] = {}
        self.in_flight: dict[str, int] = {}
        self.peak: dict[str, int] = {}

    async def completion(self, **kwargs: Any) -> Any:
        """Send one call, waiting while this tenant has `per_key` calls in flight."""
        send = self._send
        if send is None:
            import litellm  # heavy; imported by the first LLM call, as the transport does

            litellm.suppress_debug_info = True
            send = litellm.acompletion
        tenant = CURRENT_TENANT.get() or ""
        # One semaphore per event loop too: a semaphore waited on in one loop cannot be waited on in another.
        semaphore = self._semaphores.setdefault((id(asyncio.get_running_loop()), tenant),
                                                asyncio.Semaphore(self.per_key))
        async with semaphore:
            self.in_flight[tenant] = self.in_flight.get(tenant, 0) + 1
            self.peak[tenant] = max(self.peak.get(tenant, 0), self.in_flight[tenant])
            try:
                return await send(**kwargs)
            finally:
                self.in_flight[tenant] -= 1
