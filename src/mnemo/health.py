"""Whether this server can do its work: the database, the job workers, the chat model.

/readyz asks here (mnemo.server.health decides what makes the server not ready).
Each check answers a status word and a few numbers, never a name, an id or an
error's message (which may hold a database URL).

- database: one cheap query (is anyone here yet).
- workers: the heartbeats that every worker, in any process sharing the store,
  writes every `heartbeat_seconds` (mnemo.batch.jobs); alive while younger than
  `worker_stale_seconds`.
- model: the chat model's endpoint asked for its models, at most once per
  `model_check_seconds` however often a probe comes; "not_configured" without one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from .domain import utcnow
from .providers.base import ChatModel, ModelError, ModelUnavailable
from .settings import HealthSettings
from .store.base import AccountStore, JobQueue


class HealthStore(AccountStore, JobQueue, Protocol):
    """What the checks read: whether anyone is here, the heartbeats, the queue's counts."""


@dataclass(frozen=True)
class Check:
    status: str  # ok, failed, or a word of the check's own (not_configured, unreachable, …)
    details: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {"status": self.status, **self.details}


class Health:
    def __init__(
        self,
        store: HealthStore,
        chat: ChatModel | None,
        settings: HealthSettings,
        clock: Callable[[], datetime] = utcnow,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._chat = chat
        self.settings = settings
        self._clock = clock
        self._monotonic = monotonic
        self._model: tuple[float, Check] | None = None  # the last check of the model, and when
        self._model_lock = asyncio.Lock()

    async def database(self) -> Check:
        try:
            await self._store.any_user()
        except Exception as exc:  # any failure of the database is the answer
            return Check("failed", {"error": type(exc).__name__})
        return Check("ok")

    async def workers(self) -> Check:
        """How many workers are alive, and how old the newest heartbeat is."""
        now = self._clock()
        try:
            beats = await self._store.heartbeats(now - timedelta(seconds=self.settings.worker_stale_seconds))
        except Exception as exc:
            return Check("failed", {"error": type(exc).__name__})
        newest = round((now - beats[0]).total_seconds(), 1) if beats else None
        return Check("ok" if beats else "none", {"alive": len(beats), "newest_heartbeat_seconds": newest})

    async def jobs(self) -> dict[str, int]:
        """How many jobs are in each state, everyone's together."""
        return await self._store.job_counts()

    async def model(self) -> Check:
        if self._chat is None:
            return Check("not_configured")
        async with self._model_lock:  # probes at once share one check
            fresh = self._model and self._monotonic() - self._model[0] < self.settings.model_check_seconds
            if self._model is not None and fresh:
                checked_at, check = self._model
            else:
                checked_at, check = self._monotonic(), await self._ping(self._chat)
                self._model = (checked_at, check)
        age = round(self._monotonic() - checked_at, 1)
        return Check(check.status, {**check.details, "checked_seconds_ago": age})

    async def _ping(self, chat: ChatModel) -> Check:
        try:
            await chat.ping(self.settings.model_timeout_seconds)
        except ModelUnavailable:
            return Check("unreachable")
        except ModelError:
            return Check("refused")
        return Check("ok")
