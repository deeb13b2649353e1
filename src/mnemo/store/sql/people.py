"""Users, agents, API keys, settings and conversations: the statements both stores share.

A user is found by name, and an API key by id, through the transaction's
questions that cross users (see tx.py); everything else names its user.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...domain import (
    UNSET,
    Agent,
    ApiKey,
    Conflict,
    InvalidInput,
    Message,
    NameTaken,
    NotFound,
    ReviewPolicy,
    Scope,
    User,
    new_id,
    parse_time,
)
from ..fulltext import message_words
from ..rows import AGENT_COLUMNS, KEY_COLUMNS, USER_COLUMNS, agent_from, key_from, user_from
from . import recalls
from .tx import Tx

AGENT_FIELDS = frozenset({"name", "persona", "upstream_model", "private", "reads_default"})


# -- users ---------------------------------------------------------------------------------


async def user_row(tx: Tx, user_id: str) -> User | None:
    await tx.enter(user_id)
    row = await tx.one(f"SELECT {USER_COLUMNS} FROM users WHERE id = ?", (user_id,))
    return user_from(row) if row else None


async def find_user(tx: Tx, name: str) -> User | None:
    user_id = await tx.user_named(name)
    return None if user_id is None else await user_row(tx, user_id)


# Who holds a name is decided under one lock (PostgreSQL: an advisory lock; SQLite's writer
# holds every other off already): a new person, a name someone is given and a rename wait for
# one another, so a check of a name and the write after it see the same holder.
NAMES_LOCK = "the users' names"


async def ensure_user(tx: Tx, name: str, now: datetime) -> User:
    """The user of that name, created if there is none (the command line's --user)."""
    user_id = await tx.user_named(name)
    if user_id is None:
        await tx.lock_user(NAMES_LOCK)
        user_id = await tx.user_named(name) or await _insert_user(tx, name, now)
    user = await user_row(tx, user_id)
    if user is None:
        raise NotFound(f"no user {name!r}")
    return user


async def create_user(tx: Tx, name: str, now: datetime) -> User:
    """A new user of that name; Conflict if someone has it (never someone else's account)."""
    await tx.lock_user(NAMES_LOCK)
    if await tx.user_named(name) is not None:
        raise NameTaken(f"a user named {name!r} already exists")
    user = await user_row(tx, await _insert_user(tx, name, now))
    if user is None:
        raise NotFound(f"no user {name!r}")
    return user


async def _insert_user(tx: Tx, name: str, now: datetime) -> str:
    user_id = new_id()
    await tx.enter(user_id)
    await tx.execute("INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)", (user_id, name, now))
    return user_id


async def update_user(
    tx: Tx,
    user_id: str,
    memory_enabled: Any,
    review_policy: Any,
    record_recalls: Any = UNSET,
    gate_changes: dict[str, str] | None = None,
    review_stale: Any = UNSET,
    name: Any = UNSET,
    disabled_at: Any = UNSET,
    now: datetime | None = None,
) -> User:
    if name is not UNSET:
        await tx.lock_user(NAMES_LOCK)
        holder = await tx.user_named(name)
        if holder is not None and holder != user_id:
            raise NameTaken(f"a user named {name!r} already exists")
        await tx.execute("UPDATE users SET name = ? WHERE id = ?", (name, user_id))
    if disabled_at is not UNSET:
        await tx.execute("UPDATE users SET disabled_at = ? WHERE id = ?", (disabled_at, user_id))
    if memory_enabled is not UNSET:
        await tx.execute(
            "UPDATE users SET memory_enabled = ? WHERE id = ?",
            (None if memory_enabled is None else bool(memory_enabled), user_id),
        )
    if review_policy is not UNSET:
        await tx.execute(
            "UPDATE users SET review_policy = ? WHERE id = ?", (str(ReviewPolicy(review_policy)), user_id)
        )
    if record_recalls is not UNSET:
        on = bool(record_recalls)
        await tx.lock_user(user_id)  # a recall's log waits, or is written and deleted (sql/recalls.py)
        # off: when, so that no recall from before is recorded later (sql/recalls.py)
        await tx.execute(
            "UPDATE users SET record_recalls = ?, recalls_off_at = COALESCE(?, recalls_off_at) WHERE id = ?",
            (on, None if on else now, user_id),
        )
        if not on:  # off: what was recorded goes with it
            await recalls.forget_all(tx, user_id)
    if review_stale is not UNSET:
        await tx.execute("UPDATE users SET review_stale = ? WHERE id = ?", (bool(review_stale), user_id))
    if gate_changes:
        # read and written under the user's lock: two changes at once to different categories
        # both land; an unknown category or action (InvalidInput) changes nothing
        await tx.lock_user(user_id)
        current = await user_row(tx, user_id)
        if current is None:
            raise NotFound(f"no user {user_id}")
        chosen = tx.json(current.gate.changed(gate_changes).choices())
        await tx.execute("UPDATE users SET sensitive_gate = ? WHERE id = ?", (chosen, user_id))
    user = await user_row(tx, user_id)
    if user is None:
        raise NotFound(f"no user {user_id}")
    return user


async def all_users(tx: Tx) -> list[User]:
    """Everyone, in name order."""
    found = [await user_row(tx, user_id) for user_id in await tx.user_ids()]
    return [u for u in found if u is not None]


async def users_with(tx: Tx, table: str) -> list[User]:
    """Everyone with a row in `table`, in name order."""
    found = [await user_row(tx, user_id) for user_id in await tx.users_with(table)]
    return sorted((u for u in found if u is not None), key=lambda u: u.name)


async def import_user(tx: Tx, user: User, now: datetime) -> User:
    await tx.enter(user.id)
    created = await tx.one(
        "INSERT INTO users (id, name, created_at, memory_enabled, review_policy, record_recalls,"
        " sensitive_gate, review_stale) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
        (
            user.id,
            user.name,
            now,
            user.memory_enabled,
            str(user.review_policy),
            user.record_recalls,
            tx.json(user.gate.choices()),
            user.review_stale,
        ),
    )
    if created is None:
        raise Conflict(f"a user with the id {user.id} or the name {user.name!r} already exists")
    return await user_row(tx, user.id) or user


# -- agents --------------------------------------------------------------------------------


async def agent_row(tx: Tx, user_id: str, agent_id: str) -> Agent:
    row = await tx.one(
        f"SELECT {AGENT_COLUMNS} FROM agents WHERE id = ? AND user_id = ? AND deleted_at IS NULL",
        (agent_id, user_id),
    )
    if row is None:
        raise NotFound(f"no agent {agent_id}")
    return agent_from(row)


async def list_agents(tx: Tx, user_id: str) -> list[Agent]:
    rows = await tx.all(
        f"SELECT {AGENT_COLUMNS} FROM agents WHERE user_id = ? AND deleted_at IS NULL ORDER BY"
        " created_at, id",
        (user_id,),
    )
    return [agent_from(r) for r in rows]


async def _unique_agent_name(tx: Tx, user_id: str, name: str, agent_id: str | None) -> None:
    clash = await tx.one(
        "SELECT id FROM agents WHERE user_id = ? AND name = ? AND deleted_at IS NULL", (user_id, name)
    )
    if clash and clash[0] != agent_id:
        raise NameTaken(f"an agent named {name!r} already exists")


async def create_agent(tx: Tx, agent: Agent, now: datetime) -> Agent:
    await _unique_agent_name(tx, agent.user_id, agent.name, None)
    await tx.execute(
        "INSERT INTO agents (id, user_id, name, private, reads_default, created_at, persona, upstream_model)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            agent.id,
            agent.user_id,
            agent.name,
            agent.private,
            agent.reads_default,
            now,
            agent.persona,
            agent.upstream_model,
        ),
    )
    return agent


async def update_agent(tx: Tx, user_id: str, agent_id: str, fields: dict[str, object]) -> Agent:
    """Change an agent's name, persona, upstream_model, private or reads_default."""
    unknown = set(fields) - AGENT_FIELDS
    if unknown:
        raise InvalidInput(f"cannot change {', '.join(sorted(unknown))} of an agent")
    await agent_row(tx, user_id, agent_id)
    if "name" in fields:
        await _unique_agent_name(tx, user_id, str(fields["name"]), agent_id)
    for column, value in fields.items():  # column: one of AGENT_FIELDS
        if column in ("private", "reads_default"):
            value = bool(value)
        await tx.execute(
            f"UPDATE agents SET {column} = ? WHERE id = ? AND user_id = ?", (value, agent_id, user_id)
        )
    return await agent_row(tx, user_id, agent_id)


async def retire_agent(tx: Tx, user_id: str, agent_id: str, now: datetime) -> None:
    """Delete the agent, which must have no active fact or candidate left (its facts stay)."""
    await agent_row(tx, user_id, agent_id)
    left = await tx.one(
        "SELECT id FROM facts WHERE user_id = ? AND agent_id = ? AND status IN ('active',"
        " 'candidate') LIMIT 1",
        (user_id, agent_id),
    )
    if left is not None:
        raise Conflict(f"agent {agent_id} gained memory {left[0]} meanwhile")
    await tx.execute(
        "UPDATE agents SET deleted_at = ? WHERE id = ? AND user_id = ?", (now, agent_id, user_id)
    )


async def import_agent(tx: Tx, agent: Agent, now: datetime) -> bool:
    created = await tx.one(
        "INSERT INTO agents (id, user_id, name, private, reads_default, persona, upstream_model, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
        (
            agent.id,
            agent.user_id,
            agent.name,
            agent.private,
            agent.reads_default,
            agent.persona,
            agent.upstream_model,
            now,
        ),
    )
    if created is not None:
        return True
    mine = await tx.one("SELECT id FROM agents WHERE user_id = ? AND id = ?", (agent.user_id, agent.id))
    if mine is None:
        raise Conflict(f"the agent {agent.name!r} ({agent.id}) clashes with an agent already here")
    return False


# -- API keys and settings -------------------------------------------------------------------


async def add_api_key(tx: Tx, key: ApiKey) -> ApiKey:
    if await tx.one("SELECT 1 FROM users WHERE id = ?", (key.user_id,)) is None:
        raise NotFound(f"no user {key.user_id}")
    # a request names its key by id alone (key_owner); the table's key is (user_id, id), which
    # keeps no id unique across users, so a random id that is taken already is refused here
    if await tx.key_owner(key.id) is not None:
        raise Conflict(f"an API key with the id {key.id} already exists")
    await tx.execute(
        "INSERT INTO api_keys (id, user_id, name, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)",
        (key.id, key.user_id, key.name, key.secret_hash, key.created_at),
    )
    return key


async def get_api_key(tx: Tx, key_id: str) -> ApiKey | None:
    owner = await tx.key_owner(key_id)
    if owner is None:
        return None
    row = await tx.one(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE user_id = ? AND id = ?", (owner, key_id))
    return key_from(row) if row else None


async def list_api_keys(tx: Tx, user_id: str) -> list[ApiKey]:
    rows = await tx.all(
        f"SELECT {KEY_COLUMNS} FROM api_keys WHERE user_id = ? ORDER BY created_at, id", (user_id,)
    )
    return [key_from(r) for r in rows]


async def revoke_api_key(tx: Tx, user_id: str, key_id: str, now: datetime) -> ApiKey:
    row = await tx.one(
        "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? AND user_id = ?"
        f" RETURNING {KEY_COLUMNS}",
        (now, key_id, user_id),
    )
    if row is None:
        raise NotFound(f"no API key {key_id}")
    return key_from(row)


async def touch_api_key(tx: Tx, user_id: str, key_id: str, hour: datetime) -> None:
    """Note that the key worked within `hour` (a whole hour): written once an hour at most."""
    await tx.execute(
        "UPDATE api_keys SET last_used_at = ? WHERE user_id = ? AND id = ?"
        " AND (last_used_at IS NULL OR last_used_at < ?)",
        (hour, user_id, key_id, hour),
    )


async def get_setting(tx: Tx, key: str) -> str | None:
    row = await tx.one("SELECT value FROM settings WHERE key = ?", (key,))
    return row[0] if row else None


async def first_setting(tx: Tx, key: str, value: str) -> str:
    """The setting's value, `value` if it had none: the first writer wins, and every writer
    reads what it wrote (two processes starting together keep one secret)."""
    await tx.execute(
        "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, value)
    )
    row = await tx.one("SELECT value FROM settings WHERE key = ?", (key,))
    assert row is not None
    return str(row[0])


async def set_setting(tx: Tx, key: str, value: str | None) -> None:
    if value is None:
        await tx.execute("DELETE FROM settings WHERE key = ?", (key,))
    else:
        await tx.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value ="
            " excluded.value",
            (key, value),
        )


# -- conversations (ids are each user's own: keys are (user_id, id)) -------------------------


async def add_conversation(
    tx: Tx, user_id: str, conversation_id: str, agent_id: str | None, at: datetime
) -> None:
    await tx.execute(
        "INSERT INTO conversations (id, user_id, agent_id, created_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (user_id, id) DO NOTHING",
        (conversation_id, user_id, agent_id, at),
    )


async def add_message(tx: Tx, user_id: str, conversation_id: str, m: Message, at: datetime) -> bool:
    """Whether the message is new; one the user has already must be this conversation's."""
    words = None if m.erased_at is not None else await tx.words_of(user_id, message_words(user_id, m.content))
    added = await tx.execute(
        "INSERT INTO messages (id, conversation_id, user_id, role, content, created_at, words)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, id) DO NOTHING",
        (m.id, conversation_id, user_id, m.role, m.content, at, words),
    )
    if added == 1:
        if m.erased_at is not None:  # imported as it was: erased, with when
            await tx.execute(
                "UPDATE messages SET content = '', erased_at = ? WHERE user_id = ? AND id = ?",
                (m.erased_at, user_id, m.id),
            )
        return True
    await tx.drop_words(words)
    found = await tx.one(
        "SELECT 1 FROM messages WHERE user_id = ? AND id = ? AND conversation_id = ?",
        (user_id, m.id, conversation_id),
    )
    if found is None:
        raise Conflict(f"message id {m.id} belongs to another of your conversations")
    return False


async def save_messages(
    tx: Tx, scope: Scope, conversation_id: str, messages: Sequence[Message], at: datetime
) -> list[Message]:
    await add_conversation(tx, scope.user_id, conversation_id, scope.agent_id, at)
    saved = []
    for m in messages:
        m = Message(m.role, m.content, m.id or new_id())
        await add_message(tx, scope.user_id, conversation_id, m, at)
        saved.append(m)
    return saved


async def rewrite_messages(
    tx: Tx, user_id: str, conversation_id: str, rewrites: Sequence[tuple[str, str]]
) -> None:
    """Messages of the conversation given new contents: the gate's masks of what they held
    (and their words, which held it too)."""
    for mid, content in rewrites:
        words = await tx.words_of(user_id, message_words(user_id, content))
        if not await tx.execute(
            "UPDATE messages SET content = ?, words = ? WHERE user_id = ? AND conversation_id = ? AND id = ?",
            (content, words, user_id, conversation_id, mid),
        ):
            await tx.drop_words(words)


async def conversation_messages(tx: Tx, user_id: str, conversation_id: str) -> list[Message]:
    rows = await tx.all(
        "SELECT id, role, content, erased_at, created_at FROM messages WHERE user_id = ?"
        " AND conversation_id = ? ORDER BY created_at, id",
        (user_id, conversation_id),
    )
    return [Message(r[1], r[2], r[0], at=parse_time(r[4]), erased_at=parse_time(r[3])) for r in rows]
