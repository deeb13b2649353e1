"""`mnemo reindex`: give every fact a vector of the configured embedding model.

A fact may hold a vector per model (migration 5). Recall reads the vectors of
the model its process is configured with (`embedder.model_name`), so reindexing
writes the new model's vectors beside the old ones, which keep serving the
servers still configured with the old model. The switch is the operator's
restart onto the new model, at once for every fact, because every fact already
has its vector then. The steps:

1. configure the new model where `mnemo reindex` runs, and run it (servers keep
   running on the old model, recall unchanged);
2. restart the servers on the new model;
3. run `mnemo reindex` again: it embeds only what was written or edited in
   between (a fact whose text changes loses its other models' vectors, since
   they embed the old text), then `mnemo reindex --prune` drops the old vectors.

Nothing records progress: a fact without a vector of the model is what is left
to do, so a run that stops (Ctrl-C, a failing model) resumes by running again,
and a run with nothing left does nothing. A vector is written only while its
fact is still at the version that was read; a fact changed meanwhile is left
for the next run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..domain import NotFound, User
from ..providers.base import Embedder
from ..store.base import AccountStore, ReindexStore

BATCH_SIZE = 64


@dataclass
class UserReport:
    user: str
    embedded: int = 0  # vectors written
    changed: int = 0  # facts changed while being embedded: left for the next run
    pruned: int = 0  # other models' vectors dropped (--prune)
    done: bool = False  # every fact read had its vector when the user was left
    models: dict[str, int] = field(default_factory=dict)  # vectors per model, afterwards

    def to_json(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "embedded": self.embedded,
            "changed": self.changed,
            "pruned": self.pruned,
            "done": self.done,
            "vectors": self.models,
        }


@dataclass
class Report:
    model: str
    prune: bool
    users: list[UserReport] = field(default_factory=list)
    batches: int = 0
    stopped: str | None = None  # why the run stopped early, if it did

    @property
    def embedded(self) -> int:
        return sum(u.embedded for u in self.users)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "prune": self.prune,
            "batches": self.batches,
            "embedded": self.embedded,
            "complete": self.stopped is None and all(u.done for u in self.users),
            "stopped": self.stopped,
            "users": [u.to_json() for u in self.users],
        }


class ReindexTarget(ReindexStore, AccountStore, Protocol):
    """What reindex uses: the vectors of each model, and the users by name."""


class Reindex:
    """One run over some users' facts; `progress(user, n)` after each batch of n facts."""

    def __init__(
        self,
        store: ReindexTarget,
        embedder: Embedder,
        *,
        batch_size: int = BATCH_SIZE,
        progress: Callable[[str, int], None] | None = None,
        stop_requested: Callable[[], bool] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.store = store
        self.embedder = embedder
        self.batch_size = batch_size
        self.progress = progress or (lambda user, n: None)
        self.stop_requested = stop_requested or (lambda: False)
        self.report = Report(embedder.model_name, prune=False)

    async def users(self, names: Sequence[str] | None) -> list[User]:
        """The named users (NotFound for a name nobody has), or everyone with facts."""
        if names is None:
            return await self.store.users_with_facts()
        found = []
        for name in names:
            user = await self.store.find_user(name)
            if user is None:
                raise NotFound(f"no user named {name!r}")
            found.append(user)
        return found

    async def run(self, users: Sequence[User], *, prune: bool = False) -> Report:
        model = self.embedder.model_name
        self.report = report = Report(model, prune=prune)
        for user in users:
            if self.stop_requested():
                report.stopped = "interrupted"
                break
            u = UserReport(user.name)
            report.users.append(u)
            after = 0
            while True:
                if self.stop_requested():
                    report.stopped = "interrupted"
                    break
                batch = await self.store.unembedded(user.id, model, after, self.batch_size)
                if not batch:
                    u.done = u.changed == 0
                    break
                vectors = await self.embedder.embed([f.text for f in batch])
                written = await self.store.add_vectors(user.id, model, list(zip(batch, vectors, strict=True)))
                u.embedded += written
                u.changed += len(batch) - written
                after = batch[-1].rowid
                report.batches += 1
                self.progress(user.name, len(batch))
            # pruning is safe only when every fact has a vector of the model
            if prune and u.done:
                u.pruned = await self.store.drop_vectors(user.id, model)
            u.models = await self.store.vector_models(user.id)
            if report.stopped is not None:
                break
        return report
