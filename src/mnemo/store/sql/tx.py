"""One transaction, as the shared SQL of both stores sees it: statements and their answers.

Every statement shared by the stores is written once, in SQLite's form: `?`
placeholders, booleans tested as `x` / `NOT x` (or `x = {tx.true}` where a
partial index on `x = 1` must serve), `ON CONFLICT … DO …` upserts and
`RETURNING`, which PostgreSQL reads as they are once `?` becomes `%s`. What the
two databases say differently is asked of the transaction: the literal true, a
JSON value (`json`), whether a JSON array holds a value (`json_has`), the index of
messages' words (`words_of`, `drop_words`, `messages_with_words`), and the
questions that cross users or enter one (`enter`, `user_named`, `key_owner`,
…): plain queries on SQLite, the narrow functions of
migrations/postgres_security.py under PostgreSQL's row-level security.

Shared code is `async` and awaits only its transaction. PostgreSQL awaits the
network; SQLite's answers are there at once, so a whole transaction of shared
code runs on the store's connection thread in one go (`run_sync`): one thread
hop per store call, however many statements it sends.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
Params = Sequence[Any]
Row = tuple[Any, ...]


class Statements(Protocol):
    """Statements and their answers: all that the shared code of the migrations needs."""

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run a statement; how many rows it changed."""

    async def one(self, sql: str, params: Params = ()) -> Row | None: ...
    async def all(self, sql: str, params: Params = ()) -> list[Row]: ...
    async def many(self, sql: str, rows: Sequence[Params]) -> None:
        """Run a statement once per parameter row."""


class Tx(Statements, Protocol):
    """One open transaction (or, for SQLite's reads, one connection under the store's lock)."""

    # -- what the two databases say differently ------------------------------------
    true: str  # the literal true, as a partial index's condition names it ("1", "true")

    def json(self, value: Any) -> Any:
        """A parameter for a JSON column."""

    def json_has(self, array: str, value: str) -> str:
        """A condition: the JSON array (SQL expression) holds the text value (SQL expression)."""

    def json_text(self, document: str, key: str) -> str:
        """An expression: the text at `key` (a plain name) of the JSON object (SQL expression)."""

    def after_commit(self, then: Callable[[], None]) -> None:
        """Run `then` once this transaction has committed (not at all if it rolls back)."""

    # -- the index of messages' words (fulltext.message_words) ---------------------
    async def words_of(self, user_id: str, words: Sequence[str]) -> Any:
        """What a message's `words` column holds for these words (None: it has none, or its
        text was erased), to be written with its content."""

    async def drop_words(self, value: Any) -> None:
        """A value of `words_of` that no message came to hold."""

    async def messages_with_words(
        self, user_id: str, phrases: Sequence[Sequence[str]], after: Any, limit: int
    ) -> list[Row]:
        """At most `limit` of the person's messages not erased whose words hold one of the
        phrases (each a text's words, in a row), by their key, after `after` (None: from the
        first): (key, created at, conversation id, id, content)."""

    # -- entering a user, and the questions that cross users -----------------------
    async def enter(self, user_id: str) -> None:
        """From here on the transaction acts for this user (PostgreSQL: row-level security)."""

    async def lock_user(self, user_id: str) -> None:
        """Hold the user's writers off until the transaction ends (their event chain)."""

    async def user_named(self, name: str) -> str | None: ...
    async def key_owner(self, key_id: str) -> str | None:
        """The owner of an API key id (entered), if there is one."""

    async def claimant(self, job_id: str, worker: str) -> str | None:
        """The owner of the job (entered), while `worker` holds its claim."""

    async def any_user(self) -> bool: ...
    async def user_ids(self) -> list[str]:
        """Everyone's id, in name order."""

    async def job_counts(self) -> list[tuple[str, int]]:
        """(state, number of jobs) for each state that has jobs, whoever's they are."""

    async def users_with(self, table: str) -> list[str]:
        """Ids of the users with a row in `table` ("facts" or "conversations")."""


CHUNK = 500  # ids per IN list


def chunks(ids: Sequence[str]) -> list[Sequence[str]]:
    return [ids[i : i + CHUNK] for i in range(0, len(ids), CHUNK)]


def marks(n: int) -> str:
    """`n` placeholders for an IN list."""
    return ", ".join("?" * n)


@functools.lru_cache(maxsize=1024)
def as_format(sql: str) -> str:
    """A statement in the shared form (`?`), in psycopg's (`%s`, a literal % doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class SyncTx:
    """`Statements` over a DB-API cursor whose answers come at once: SQLite's, and the cursors of
    the migrations (both databases). Its methods never suspend (see `run_sync`)."""

    def __init__(self, cursor: Any, *, format_params: bool = False) -> None:
        self.cursor = cursor
        self._format = format_params
        self.committed: list[Callable[[], None]] = []

    def after_commit(self, then: Callable[[], None]) -> None:
        self.committed.append(then)

    def _sql(self, sql: str) -> str:
        return as_format(sql) if self._format else sql

    async def execute(self, sql: str, params: Params = ()) -> int:
        return int(self.cursor.execute(self._sql(sql), params).rowcount)

    async def one(self, sql: str, params: Params = ()) -> Row | None:
        row = self.cursor.execute(self._sql(sql), params).fetchone()
        return None if row is None else tuple(row)

    async def all(self, sql: str, params: Params = ()) -> list[Row]:
        return [tuple(r) for r in self.cursor.execute(self._sql(sql), params).fetchall()]

    async def many(self, sql: str, rows: Sequence[Params]) -> None:
        self.cursor.executemany(self._sql(sql), rows)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run shared code whose awaits all complete at once (a `SyncTx`'s) to its end, here."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("shared SQL awaited something other than its synchronous transaction")
