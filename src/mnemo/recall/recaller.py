"""Before every turn: scope first, then the arms, then fusion and the budget."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Protocol

import numpy as np

from .. import audit
from ..domain import Fact, Scope, Status, readable_agent_keys, shift
from ..language import NOUNS_CAPITALISED, foreign
from ..observe import QUIET, Observer
from ..providers.base import Embedder
from ..settings import RecallSettings
from ..store.base import AccountStore, Ask, AuditLog, ScoredFact, SearchStore
from .fuse import Hit, rrf, within_budget
from .when import Window, window

ARMS = ("pinned", "recency", "semantic", "topic", "lexical", "time")
_WORD = re.compile(r"\w+")
# A capitalised word that does not open a sentence (with its possessive): a name.
# Single capitals ("I") and acronyms ("LGBTQ") are not names here; nor is the first
# word after an opening mark ("¿Dónde…", "«Wo…").
_NAME = re.compile(r"(?<![.!?:]\s)(?<![¿¡«„“\"(])(?<!^)\b[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+(?:['’]s\b)?")


def without_names(query: str) -> str:
    """The query with its names taken out: what the "topic" arm embeds.

    A small embedder puts a name in a question ("What does Melanie do to
    destress?") close to every fact that names the same person, whatever the
    fact is about, so the nearest facts are the person's rather than the
    topic's. The topic arm searches with the name-free question; the names
    still count through the semantic and lexical arms. Empty when nothing is
    left; the query itself when it names no one, or when it is in a language
    that capitalises every noun (German: "Welches Instrument spiele ich?" names
    no one), where a capital cannot tell a name.
    """
    if not _NAME.search(query) or foreign(query) in NOUNS_CAPITALISED:
        return query
    stripped = " ".join(_NAME.sub(" ", query).split())
    return stripped if _WORD.search(stripped) else ""


class RecallStore(SearchStore, AuditLog, AccountStore, Protocol):
    """What recall reads: the arms, the audit log (for `as_of`) and the user's agents."""


class Recaller:
    def __init__(
        self,
        store: RecallStore,
        embedder: Embedder,
        settings: RecallSettings,
        clock: Callable[[], datetime],
        observer: Observer = QUIET,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.clock = clock
        self.observer = observer

    async def recall(
        self,
        scope: Scope,
        query: str,
        *,
        as_of: datetime | None = None,
        limit: int | None = None,
        vector: np.ndarray | None = None,
        arms: Sequence[str] = ARMS,
    ) -> list[Hit]:
        """Facts for `query`, best first, each with the arms that found it.

        With `as_of`, answers from what the store believed at that time (rebuilt
        from the audit log) instead of from what it believes now. A query that names
        a time ("last month", "in 2022"; see recall/when.py, read against the clock or
        `as_of`) adds the "time" arm: the facts said or become true then, nearest first.
        """
        ranked = await self.ranked(scope, query, as_of=as_of, vector=vector, arms=arms)
        s = self.settings
        max_facts = s.max_facts if limit is None else limit
        return within_budget(fused(ranked, s), max_facts=max_facts, max_tokens=s.max_tokens)

    async def ranked(
        self,
        scope: Scope,
        query: str,
        *,
        as_of: datetime | None = None,
        vector: np.ndarray | None = None,
        arms: Sequence[str] = ARMS,
    ) -> dict[str, list[tuple[Fact, float]]]:
        """Each arm's facts for `query`, best first, before fusion: what `recall` fuses."""
        now = self.clock() if as_of is None else as_of
        span = window(query, now) if "time" in arms else None
        topic = without_names(query) if "topic" in arms else ""
        if topic == " ".join(query.split()):
            topic = ""  # it names no one: the semantic arm already searches this
        texts = []
        if vector is None and ("semantic" in arms or span) and query.strip():
            texts.append(query)
        if topic:
            texts.append(topic)  # one embedding call for both, when both are needed
        embedded = dict(zip(texts, await self.embedder.embed_queries(texts), strict=True)) if texts else {}
        vectors = {"semantic": embedded.get(query, vector), "topic": embedded.get(topic)}
        if as_of is None:
            return await self._live(scope, query, vectors, now, arms, span)
        return await self._past(scope, query, vectors, as_of, arms, span)

    async def _live(
        self,
        scope: Scope,
        query: str,
        vectors: dict[str, np.ndarray | None],
        now: datetime,
        arms: Sequence[str],
        span: Window | None,
    ) -> dict[str, list[tuple[Fact, float]]]:
        """The arms' searches go to the store together (SearchStore.arms): on PostgreSQL each is
        a query of its own on a pooled connection, so a recall waits for the slowest arm rather
        than for their sum; on SQLite all take one trip to the store's thread."""
        s = self.settings
        model = self.embedder.model_name
        asks: dict[str, Ask] = {}
        if "pinned" in arms:
            asks["pinned"] = Ask("pinned")
        if "recency" in arms:
            asks["recency"] = Ask("recent", (shift(now, -timedelta(days=s.recency_days)), s.recency_k))
        for arm, vector in _searched(vectors, arms):
            asks[arm] = Ask("nearest", (vector, model, s.semantic_k))
        if "lexical" in arms:
            asks["lexical"] = Ask("lexical", (query, s.lexical_k))
        if span is not None:
            asks["time"] = Ask("during", (span.start, span.end, s.time_k))
        answers = await self.store.arms(scope, asks, self.observer.recall_arm)
        found: dict[str, list[Fact]] = {a: answers[a] for a in ("pinned", "recency", "time") if a in answers}
        hits: dict[str, list[ScoredFact]] = {
            a: answers[a] for a in ("semantic", "topic", "lexical") if a in answers
        }
        out: dict[str, list[tuple[Fact, float]]] = {}
        if "pinned" in found:
            out["pinned"] = [(f, 1.0) for f in found["pinned"] if f.is_valid_at(now)]
        if "recency" in found:
            out["recency"] = [(f, _age_hours(f, now)) for f in found["recency"] if f.is_valid_at(now)]
        for arm in ("semantic", "topic"):
            if arm in hits:
                out[arm] = [
                    (n.fact, n.score)
                    for n in hits[arm]
                    if n.score >= s.semantic_floor and n.fact.is_valid_at(now)
                ]
        if "lexical" in hits:
            out["lexical"] = [(n.fact, n.score) for n in hits["lexical"] if n.fact.is_valid_at(now)]
        if "time" in found:
            out["time"] = await self._nearest_of(
                [f for f in found["time"] if f.is_valid_at(now)], scope, vectors
            )
        return out

    async def _nearest_of(
        self, facts: list[Fact], scope: Scope, vectors: dict[str, np.ndarray | None]
    ) -> list[tuple[Fact, float]]:
        """The time arm: the facts of the window, nearest the query first, above the
        semantic floor (a query with a window always has a vector: it has words)."""
        vector = vectors.get("semantic")
        if vector is None or not facts:
            return []
        stored = await self.store.vectors(
            Scope(scope.user_id, all_agents=True), [f.id for f in facts], self.embedder.model_name
        )
        s = self.settings
        scored = [(f, float(np.dot(stored[f.id], vector))) for f in facts if f.id in stored]
        return sorted((x for x in scored if x[1] >= s.semantic_floor), key=lambda x: -x[1])[: s.semantic_k]

    async def _past(
        self,
        scope: Scope,
        query: str,
        vectors: dict[str, np.ndarray | None],
        at: datetime,
        arms: Sequence[str],
        span: Window | None,
    ) -> dict[str, list[tuple[Fact, float]]]:
        """The same arms, computed in memory over the facts believed at `at`.

        The semantic arm uses each fact's stored vector, which is that of its
        current text; for a fact edited since `at` this is an approximation.
        """
        s = self.settings
        events = await self.store.events(scope.user_id, until=at)
        decided = scope.all_agents or scope.readable is not None
        keys = readable_agent_keys(scope, [] if decided else await self.store.list_agents(scope.user_id))
        facts = [
            f
            for f in audit.believed_at(scope.user_id, events, at).values()
            if f.status == Status.ACTIVE
            and not f.purged
            and f.is_valid_at(at)
            and (keys is None or (f.agent_id or "") in keys)
        ]
        out: dict[str, list[tuple[Fact, float]]] = {}
        if "pinned" in arms:
            out["pinned"] = [(f, 1.0) for f in facts if f.pinned]
        if "recency" in arms:
            since = shift(at, -timedelta(days=s.recency_days))
            recent = [(f, f.last_seen_at) for f in facts if f.last_seen_at and f.last_seen_at >= since]
            recent.sort(key=lambda seen: seen[1], reverse=True)
            out["recency"] = [(f, _age_hours(f, at)) for f, _ in recent[: s.recency_k]]
        searched = _searched(vectors, arms)
        if searched and facts:
            stored = await self.store.vectors(
                Scope(scope.user_id, all_agents=True), [f.id for f in facts], self.embedder.model_name
            )
            for arm, vector in searched:
                scored = [(f, float(np.dot(stored[f.id], vector))) for f in facts if f.id in stored]
                scored = [x for x in scored if x[1] >= s.semantic_floor]
                out[arm] = sorted(scored, key=lambda x: -x[1])[: s.semantic_k]
        if "lexical" in arms:
            out["lexical"] = bm25(query, facts)[: s.lexical_k]
        if span is not None:
            then = [f for f in facts if _in_span(f, span)]
            then.sort(key=lambda f: f.created_at, reverse=True)
            out["time"] = await self._nearest_of(then[: s.time_k], scope, vectors)
        return out


def _searched(vectors: dict[str, np.ndarray | None], arms: Sequence[str]) -> list[tuple[str, np.ndarray]]:
    """The vector arms asked for that have a vector to search with, and that vector."""
    return [(arm, v) for arm in ("semantic", "topic") if arm in arms and (v := vectors.get(arm)) is not None]


def fused(ranked: dict[str, list[tuple[Fact, float]]], s: RecallSettings) -> list[Hit]:
    """The arms' lists fused by the settings' weights (reciprocal-rank fusion), best first."""
    return rrf(ranked, _weights(s, ranked), k=s.rrf_k)


def _weights(s: RecallSettings, ranked: dict[str, list[tuple[Fact, float]]]) -> dict[str, float]:
    """The settings' weights, with the semantic weight shared between the two views of
    the query's meaning when both ran (topic_share to the name-free one), so that a
    query naming someone does not give the embedder twice the say of the lexical arm."""
    weights = dict(s.weights)
    dense = weights.get("semantic", 1.0)
    if "topic" in ranked and "semantic" in ranked:
        weights["semantic"], weights["topic"] = dense * (1 - s.topic_share), dense * s.topic_share
    else:
        weights["topic"] = dense
    return weights


def _in_span(fact: Fact, span: Window) -> bool:
    """Whether the fact became true, or was said, within the window (as `during` reads it)."""
    return any(t is not None and span.start <= t < span.end for t in (fact.valid_from, fact.created_at))


def _age_hours(fact: Fact, now: datetime) -> float:
    seen = fact.last_seen_at or fact.created_at
    return max(0.0, (now - seen).total_seconds() / 3600)


def bm25(query: str, facts: Sequence[Fact], k1: float = 1.2, b: float = 0.75) -> list[tuple[Fact, float]]:
    """Okapi BM25 over a small in-memory set (the as_of path; live recall uses FTS5)."""
    terms = set(_WORD.findall(query.lower()))
    if not terms or not facts:
        return []
    docs = [Counter(_WORD.findall(f.text.lower())) for f in facts]
    avg = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
    df = Counter(t for d in docs for t in terms if t in d)
    scored = []
    for fact, doc in zip(facts, docs, strict=True):
        length = sum(doc.values())
        score = 0.0
        for t in terms:
            if t in doc:
                idf = math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5))
                tf = doc[t]
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg))
        if score > 0:
            scored.append((fact, score))
    return sorted(scored, key=lambda x: -x[1])
