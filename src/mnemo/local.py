"""mnemo in this process, blocking, for scripts and notebooks: `m = mnemo.open()`.

No server and no configuration: the database is the one `mnemo serve` uses (the
default data directory, or `MNEMO_DATA_DIR`, `MNEMO_DATABASE_URL` and the other
`MNEMO_*` settings), or the one given. People are named by the caller and created
on first use. `forget` retracts (the memory stays as a tombstone; `restore`
brings it back); `erase` erases its text everywhere and answers the signed receipt.
Everything else Memory and Accounts offer is on `core` (a SyncMemory).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .domain import Category, Event, Fact, InvalidInput, Receipt, Scope, Turn
from .recall.fuse import Hit
from .settings import Settings
from .sync import SyncMemory
from .write.writer import WriteReport


def open(
    data_dir: str | Path | None = None, *, database_url: str | None = None, **settings: Any
) -> LocalMemory:
    """mnemo over the data directory `mnemo serve` uses, or `data_dir`; `database_url` (a
    postgresql:// URL) for PostgreSQL; any other keyword is a setting (`llm_model=…`)."""
    given = Settings.load(
        data_dir=Path(data_dir).expanduser() if data_dir else None, database_url=database_url, **settings
    )
    return LocalMemory(SyncMemory.open(given))


class LocalMemory:
    def __init__(self, core: SyncMemory) -> None:
        self.core = core
        self._users: dict[str, str] = {}

    def _user(self, name: str) -> str:
        if name not in self._users:
            self._users[name] = self.core.loop.run(self.core.memory.accounts.user(name)).id
        return self._users[name]

    def _own(self, user: str) -> Scope:
        return Scope(self._user(user), all_agents=True)

    def add(
        self, text: str, *, user: str, category: Category | str = Category.OTHER, pinned: bool = False
    ) -> Fact:
        """Remember `text` for `user` as they said it; restating an active memory reinforces it."""
        scope = Scope(self._user(user))
        return self.core.loop.run(
            self.core.memory.add(scope, text, category=Category(category), pinned=pinned)
        )

    def search(self, query: str, *, user: str, limit: int = 10) -> list[Hit]:
        """`user`'s active memories that best match `query`, best first: `hit.text`, `hit.score`."""
        return self.core.loop.run(self.core.memory.search(query, self._own(user), limit=limit))

    def get(self, fact_id: str, *, user: str) -> Fact:
        return self.core.loop.run(self.core.memory.get(self._own(user), fact_id))

    def list(self, *, user: str, limit: int = 50, offset: int = 0) -> list[Fact]:
        """`user`'s active memories, newest first."""
        return self.core.loop.run(self.core.memory.list(self._own(user), limit=limit, offset=offset))

    def history(self, fact_id: str, *, user: str) -> builtins.list[Event]:
        """Every change to the memory, oldest first."""
        return self.core.loop.run(self.core.memory.history(self._own(user), fact_id))

    def forget(self, fact_id: str, *, user: str) -> Fact:
        """Retract: no assistant recalls it again; it stays as a tombstone `restore` brings back."""
        return self.core.loop.run(self.core.memory.retract(self._own(user), fact_id))

    def restore(self, fact_id: str, *, user: str) -> Fact:
        return self.core.loop.run(self.core.memory.restore(self._own(user), fact_id))

    def erase(self, fact_id: str, *, user: str) -> Receipt:
        """Erase the memory's text everywhere, with the messages it was learnt from (cannot be
        undone); the answer is the signed receipt of what went."""
        _, receipt = self.core.loop.run(self.core.memory.purge(self._own(user), fact_id))
        return receipt

    def learn(self, messages: Iterable[Mapping[str, str]], *, user: str) -> WriteReport:
        """Learn from a conversation now: `[{"role": "user", "content": "…"}, …]`. With a chat
        model configured (`llm_model`…) it learns what the model finds; without one, only what
        the person asked to be remembered. `report.facts` has the ids, by what happened."""
        pairs = [_pair(m) for m in messages]
        if not pairs:
            raise InvalidInput("messages: at least one is needed")
        return self.core.loop.run(self.core.memory.remember(Turn.of(Scope(self._user(user)), *pairs)))

    def close(self) -> None:
        self.core.close()

    def __enter__(self) -> LocalMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pair(message: Mapping[str, str]) -> tuple[str, str]:
    try:
        return message["role"], message["content"]
    except (KeyError, TypeError):
        raise InvalidInput('each message is a {"role": …, "content": …} mapping') from None
