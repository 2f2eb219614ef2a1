"""Webhook delivery (spec §6.3): POST queued events to their callback, retry, give up, and log every attempt.

The worker runs on the server's event loop and shares its single SQLite connection, so every db call is
made on the loop thread and no transaction is open across an await. It polls as well as being woken, so
events written by other processes (the CLI) on the same db file are delivered too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from . import store
from .settings import Settings

log = logging.getLogger(__name__)

POLL_INTERVAL = 0.2  # seconds between looks at the queue when nobody wakes the worker
ERROR_TEXT_MAX = 200


@dataclass(frozen=True)
class DueEvent:
    id: int
    attempts: int
    payload: str
    callback_url: str


@dataclass(frozen=True)
class Attempt:
    """Outcome of one POST: a status code when the callback answered, else an error text."""

    started_at: float
    duration_ms: float
    status_code: int | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.status_code == 200


class DeliveryWorker:
    """Delivers due events one at a time, in id order, until stopped.

    Wire it in the server's lifespan: `worker.start()` on startup, `await worker.stop()` on shutdown, and
    `worker.wake()` after committing a transaction that emitted events (otherwise they go out on the next poll).
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        settings: Callable[[], Settings],
        http: httpx.AsyncClient | None = None,
        *,
        poll_interval: float = POLL_INTERVAL,
    ) -> None:
        self._conn = conn
        self._settings = settings
        self._http = http
        self._poll_interval = poll_interval
        self._wakeup = asyncio.Event()
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> asyncio.Task[None]:
        """Run the worker as a task of the current event loop."""
        self._task = asyncio.get_running_loop().create_task(self.run(), name="push-delivery")
        return self._task

    async def run(self) -> None:
        """Deliver until `stop()`; one failing round is logged and the loop goes on."""
        self._loop = asyncio.get_running_loop()
        self._task = self._task or asyncio.current_task()
        http = self._http or httpx.AsyncClient()
        try:
            while not self._stopping:
                self._wakeup.clear()  # before looking, so a wake during the round causes another round
                try:
                    await self._deliver_due(http)
                    timeout = self._idle_timeout()
                except Exception:
                    log.exception("push delivery round failed")
                    timeout = self._poll_interval
                if not self._stopping:
                    await self._sleep(timeout)
        finally:
            if self._http is None:
                await http.aclose()

    def wake(self) -> None:
        """New events are due now. Safe to call from any thread, and before `run()` has started."""
        loop = self._loop
        if loop is None or _running_loop() is loop:
            self._wakeup.set()
        else:
            loop.call_soon_threadsafe(self._wakeup.set)

    async def stop(self, grace: float | None = None) -> None:
        """Let the attempt in flight finish (bounded by the callback timeout), then end `run()`."""
        self._stopping = True
        self.wake()
        task = self._task
        if task is None or task.done() or task is asyncio.current_task():
            return
        if grace is None:
            try:
                grace = self._settings().callback_timeout + 1.0
            except Exception:  # noqa: BLE001 - shutting down must not depend on reading settings
                grace = 3.0
        done, _ = await asyncio.wait({task}, timeout=grace)
        if not done:  # an attempt cut short stays pending with its count unchanged: sent again next time
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _deliver_due(self, http: httpx.AsyncClient) -> None:
        """Attempt every event due now, oldest first, one at a time."""
        self._fail_orphans()
        while not self._stopping and (event := self._next_due()) is not None:
            settings = self._settings()
            attempt = await post_event(http, event, settings.callback_timeout)
            if not attempt.ok:
                log.info("push event %s attempt %s failed: %s", event.id, event.attempts + 1, attempt.error)
            record_attempt(self._conn, event, attempt, settings)

    def _next_due(self) -> DueEvent | None:
        row = self._conn.execute(
            "SELECT e.id, e.attempts, e.payload, s.callback_url FROM events e"
            " JOIN subscriptions s ON s.id = e.subscription_id"
            " WHERE e.status = 'pending' AND e.next_attempt_at <= ? ORDER BY e.id LIMIT 1",
            (time.time(),),
        ).fetchone()
        return DueEvent(row["id"], row["attempts"], row["payload"], row["callback_url"]) if row else None

    def _fail_orphans(self) -> None:
        """Pending events whose subscription is gone are never delivered; mark them so the console says so."""
        orphan = "e.status = 'pending' AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = e.subscription_id)"
        if self._conn.execute(f"SELECT 1 FROM events e WHERE {orphan} LIMIT 1").fetchone() is None:
            return
        with store.transaction(self._conn):
            self._conn.execute(
                f"UPDATE events SET status = 'failed' WHERE id IN (SELECT e.id FROM events e WHERE {orphan})"
            )

    def _idle_timeout(self) -> float:
        """Sleep until the next retry is due, but never longer than the poll interval."""
        row = self._conn.execute(
            "SELECT MIN(e.next_attempt_at) AS due FROM events e JOIN subscriptions s ON s.id = e.subscription_id"
            " WHERE e.status = 'pending'"
        ).fetchone()
        if row["due"] is None:
            return self._poll_interval
        return min(self._poll_interval, max(0.0, float(row["due"]) - time.time()))

    async def _sleep(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), timeout)


async def post_event(http: httpx.AsyncClient, event: DueEvent, timeout: float) -> Attempt:
    """POST the stored payload; never raises for anything the callback or the network does."""
    started, t0 = time.time(), time.perf_counter()
    status_code: int | None = None
    error: str | None = None
    try:
        async with asyncio.timeout(timeout):  # a total deadline: httpx's timeouts are per phase
            async with http.stream(
                "POST",
                event.callback_url,
                content=event.payload.encode(),
                headers={"Content-Type": "application/json"},
                timeout=timeout,
                follow_redirects=False,
            ) as response:  # the body is never read: only the status matters
                status_code = response.status_code
        if status_code != 200:
            error = f"HTTP {status_code}"
    except (TimeoutError, httpx.TimeoutException):
        status_code, error = None, f"no answer within {timeout:g} s"
    except Exception as exc:  # noqa: BLE001 - refused connection, bad URL, protocol error: a failed attempt
        status_code, error = None, f"{type(exc).__name__}: {exc}"
    duration_ms = (time.perf_counter() - t0) * 1000
    return Attempt(started, duration_ms, status_code, error[:ERROR_TEXT_MAX] if error else None)


def record_attempt(conn: sqlite3.Connection, event: DueEvent, attempt: Attempt, settings: Settings) -> None:
    """Log the attempt, then mark the event delivered, schedule its retry, or give up.

    Only a still-pending event changes: one whose subscription was deleted meanwhile stays failed.
    """
    number = event.attempts + 1
    with store.transaction(conn):
        conn.execute(
            "INSERT INTO deliveries (event_id, attempt, started_at, status_code, error, duration_ms)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (event.id, number, attempt.started_at, attempt.status_code, attempt.error, attempt.duration_ms),
        )
        store.bump(conn, "deliveries")
        store.bump(conn, "deliveries_ok" if attempt.ok else "deliveries_failed_attempts")
        status, next_at = _next_state(attempt.ok, number, settings)
        conn.execute(
            "UPDATE events SET status = ?, attempts = ?, next_attempt_at = COALESCE(?, next_attempt_at)"
            " WHERE id = ? AND status = 'pending'",
            (status, number, next_at, event.id),
        )


def _next_state(ok: bool, attempts: int, settings: Settings) -> tuple[str, float | None]:
    """(status, next attempt time) after `attempts` attempts; the last retry delay repeats."""
    if ok:
        return "delivered", None
    if attempts >= max(1, settings.delivery_attempts):
        return "failed", None
    delays = settings.retry_delays or [0.0]
    return "pending", time.time() + delays[min(attempts, len(delays)) - 1]


def delivery_log(conn: sqlite3.Connection, *, event_id: int | None = None, limit: int = 500) -> list[dict[str, Any]]:
    """Newest delivery attempts first (optionally of one event), for the console."""
    where, args = ("WHERE d.event_id = ?", (event_id,)) if event_id is not None else ("", ())
    rows = conn.execute(
        "SELECT d.id, d.event_id, e.subscription_id, d.attempt, d.started_at, d.status_code, d.error, d.duration_ms"
        f" FROM deliveries d LEFT JOIN events e ON e.id = d.event_id {where} ORDER BY d.id DESC LIMIT ?",
        (*args, limit),
    )
    return [dict(r) for r in rows]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
