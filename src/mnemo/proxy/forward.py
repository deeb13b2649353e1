"""One chat turn through the proxy: prepare, forward to the upstream, then store the turn.

Shared by /v1/chat/completions and the web page's "Try it" (which the app that
mounts both hands a `Proxy`), so that what a person tries on the page is
exactly what their assistants get: the same agent choice, recall, injection,
upstream call and storing of the turn (or not, when memory is off).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from ..accounts import Accounts
from ..domain import ErasedMeanwhile, NotRemembered, QueueFull, RecallVia, StorageFull, User
from ..memory import Memory
from ..settings import Settings
from .prepare import Prepared, prepare
from .upstream import Upstream
from .wire import ChatError, completion_text, model_entry

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Forwarded:
    """The prepared request and the upstream's successful reply (unread when streamed)."""

    prepared: Prepared
    reply: httpx2.Response


@dataclass(frozen=True)
class Completed:
    """A finished, non-streamed turn: the upstream's reply, its text, what was recalled for it,
    and whether the turn was stored."""

    prepared: Prepared
    reply: httpx2.Response
    text: str
    stored: Stored


@dataclass(frozen=True)
class Stored:
    """Whether a turn was stored to learn from, and if not, why (X-Mnemo-Stored and its reason)."""

    stored: bool
    reason: str | None = None
    failed: bool = False  # not stored because storing failed (not by choice: memory off, automation)
    turn_id: str | None = None  # stored: under this id (GET /v1/turns/{id})

    def headers(self) -> dict[str, str]:
        out = {"x-mnemo-stored": "true" if self.stored else "false"}
        if self.reason:
            out["x-mnemo-stored-reason"] = self.reason
        if self.turn_id:
            out["x-mnemo-turn"] = self.turn_id
        return out


NOT_REMEMBERED = "the conversation is not remembered"


class Proxy:
    """The chat proxy over one core: Memory recalls and stores, Accounts names the agents and
    says whether memory is on; `upstream` is None when no model server is configured."""

    def __init__(
        self, memory: Memory, accounts: Accounts, settings: Settings, upstream: Upstream | None
    ) -> None:
        self.memory = memory
        self.accounts = accounts
        self.settings = settings
        self.upstream = upstream

    async def forward(
        self,
        user: User,
        body: dict[str, Any],
        headers: Mapping[str, str],
        *,
        stream: bool = False,
        via: RecallVia = RecallVia.PROXY,
    ) -> Forwarded:
        """Recall, inject and send the request upstream; a ChatError says why not. `via`: the
        face the turn came through, as the recall log records it."""
        if self.upstream is None:
            raise ChatError(
                503,
                "no upstream model is configured: set MNEMO_UPSTREAM_BASE_URL (or MNEMO_LLM_BASE_URL)",
                "server_error",
                "upstream_not_configured",
            )
        prepared = await prepare(self.memory, self.accounts, self.settings, user, body, headers, via)
        if await self.unstored(prepared) is None and await self.memory.queue_full(user.id):
            # refused before the model is asked: a reply whose turn could not be kept is not sent
            raise ChatError(
                429,
                f"too many of your turns are waiting to be learnt from (the most is"
                f" {self.settings.jobs.max_queued_per_user}): try again in {QueueFull.retry_after} s",
                "requests",
                "learning_queue_full",
                headers={"Retry-After": str(QueueFull.retry_after)},
            )
        return Forwarded(prepared, await self.upstream.chat(prepared.body, stream=stream))

    async def unstored(self, prepared: Prepared) -> Stored | None:
        """Why this turn will not be stored, known before the reply is (a streamed reply's headers
        leave first); None when it is to be stored."""
        if prepared.user_text is None:
            return Stored(False, "no new user message")
        if prepared.automation:
            return Stored(False, "automation")
        if not prepared.memory_on:
            return Stored(False, "memory is off")
        if prepared.remember is False or prepared.switched_off:
            return Stored(False, NOT_REMEMBERED)
        return None

    async def remember(self, prepared: Prepared, reply: str) -> Stored:
        """Store the turn and queue its learning (which wakes the worker). A failure here is
        logged and reported as not stored, never turned into an error: the client still gets
        the model's reply."""
        turn = prepared.turn(reply)
        if turn is None:
            return Stored(False, "no new user message")
        try:
            if prepared.remember is not None and prepared.named:  # the person's switch, kept
                await self.memory.remember_conversation(
                    turn.scope, prepared.conversation_id, prepared.remember
                )
            if prepared.remember is False or prepared.switched_off:
                return Stored(False, NOT_REMEMBERED)
            # None when memory is off or this is automation
            job = await self.memory.submit(turn, memory_on=prepared.memory_on, gate=prepared.gate)
        except ErasedMeanwhile:
            log.info(
                "a chat turn of user %s was not stored: its conversation was erased meanwhile",
                turn.scope.user_id,
            )
            return Stored(False, "the conversation was erased while the reply was coming")
        except NotRemembered:
            return Stored(False, NOT_REMEMBERED)
        except QueueFull:
            log.warning("a chat turn of user %s was not stored: too many turns wait", turn.scope.user_id)
            return Stored(False, "too many turns wait to be learnt from", failed=True)
        except StorageFull:
            log.error(
                "a chat turn of user %s was not stored: the database's disk is full", turn.scope.user_id
            )
            return Stored(False, "storage is full", failed=True)
        except Exception:
            log.exception("a chat turn of user %s was not stored", turn.scope.user_id)
            return Stored(False, "could not store the turn", failed=True)
        if job is None:
            return Stored(False, "automation" if turn.automation else "memory is off")
        return Stored(True, turn_id=job.id)

    async def models(self, user: User) -> list[dict[str, Any]]:
        """The upstream model, and one model per agent of the user (in OpenAI's /v1/models)."""
        upstream_model = self.settings.upstream_model
        data = [model_entry(upstream_model, "upstream")] if upstream_model else []
        names = {upstream_model}
        for agent in await self.accounts.agents(user.id):
            if agent.name not in names:
                names.add(agent.name)
                data.append(model_entry(agent.name, "mnemo-agent"))
        return data

    async def complete(
        self, user: User, body: dict[str, Any], headers: Mapping[str, str], via: RecallVia = RecallVia.PROXY
    ) -> Completed:
        """A non-streamed turn, start to end. Stored before returning: once the caller has
        the reply, its turn is durable."""
        forwarded = await self.forward(user, body, headers, via=via)
        text = completion_text(forwarded.reply.content)
        stored = await self.remember(forwarded.prepared, text)
        return Completed(forwarded.prepared, forwarded.reply, text, stored)
