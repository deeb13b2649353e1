"""Before every turn: scope first, then the arms, then fusion and the budget."""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import numpy as np

from .. import audit
from ..domain import Fact, Scope, Status, readable_agent_keys, shift
from ..language import asks_the_model, load_model, model_loaded
from ..observe import QUIET, Observer
from ..providers.base import Embedder
from ..settings import RecallSettings
from ..store.base import AccountStore, Ask, AuditLog, ScoredFact, SearchStore
from .features import FEATURES, SECOND, candidates, features, second_columns
from .fuse import Hit, rrf, within_budget
from .names import without_names
from .parts import MAX_PARTS, parts
from .ranker import Ranker, second_model, shipped
from .second import QUESTION_WAIT, Second
from .when import Window, window

# "parts" runs only for the learned ranker, and only for a question about several things
ARMS = ("pinned", "recency", "semantic", "topic", "parts", "lexical", "time")
_WORD = re.compile(r"\w+")
log = logging.getLogger(__name__)


class RecallStore(SearchStore, AuditLog, AccountStore, Protocol):
    """What recall reads: the arms, the audit log (for `as_of`) and the user's agents."""


@dataclass(frozen=True, slots=True)
class Depth:
    """How many facts the semantic (and topic, and time) and lexical arms return, and the
    cosine below which a semantic arm's fact is dropped."""

    semantic: int
    lexical: int
    floor: float


class Recaller:
    def __init__(
        self,
        store: RecallStore,
        embedder: Embedder,
        settings: RecallSettings,
        clock: Callable[[], datetime],
        observer: Observer = QUIET,
        second: Second | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.clock = clock
        self.observer = observer
        # the shipped model, unless the settings ask for fusion (or none ships: fusion too);
        # with a second embedder, the model that reads its cosines too (without that model, the
        # second embedder has nothing to add: the first model ranks alone)
        learned = settings.ranker == "learned"
        paired = shipped(second_model(second.model_name), FEATURES + SECOND) if learned and second else None
        self.second = second if paired is not None else None
        self.ranker: Ranker | None = paired or (shipped() if learned else None)

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
        s = self.settings
        max_facts = s.max_facts if limit is None else limit
        if self.ranker is not None and len(arms) > 1:
            hits, rows = await self.candidates(scope, query, as_of=as_of, vector=vector, arms=arms)
            ranked = self.ranker.order(hits, rows, spread=s.session_spread, depth=2 * max_facts)
            ordered = [h for h in ranked if above_floor(h, s.semantic_floor)]
        else:
            ordered = fused(await self.ranked(scope, query, as_of=as_of, vector=vector, arms=arms), s)
        return within_budget(ordered, max_facts=max_facts, max_tokens=s.max_tokens)

    async def candidates(
        self,
        scope: Scope,
        query: str,
        *,
        as_of: datetime | None = None,
        vector: np.ndarray | None = None,
        arms: Sequence[str] = ARMS,
    ) -> tuple[list[Hit], np.ndarray]:
        """What the learned ranker orders: every fact the arms found at their candidate depth
        (`candidate_k`, no similarity floor), once, and its row of features (recall/features.py;
        with a second embedder, its SECOND columns after them)."""
        now = self.clock() if as_of is None else as_of
        second = self.second
        # the second embedder reads the question while the arms search (in a thread of its own)
        asked = None
        if second is not None and query.strip():
            asked = asyncio.ensure_future(second.embedder.embed_queries([query]))
            asked.add_done_callback(_retrieved)
        try:
            ranked = await self.ranked(scope, query, as_of=as_of, vector=vector, arms=arms, wide=True)
            hits = candidates(ranked)
            rows = features(hits, query, now, timed=bool(ranked.get("time")))
            if second is None:
                return hits, rows
            cosines = await _second_view(second, scope, hits, asked)
            return hits, np.hstack([rows, second_columns(cosines, rows)])
        finally:
            if asked is not None and not asked.done():
                asked.cancel()

    async def ranked(
        self,
        scope: Scope,
        query: str,
        *,
        as_of: datetime | None = None,
        vector: np.ndarray | None = None,
        arms: Sequence[str] = ARMS,
        wide: bool = False,
    ) -> dict[str, list[tuple[Fact, float]]]:
        """Each arm's facts for `query`, best first, before fusion: what `recall` fuses; `wide`,
        the learned ranker's candidates: each arm to `candidate_k`, with no similarity floor."""
        if not model_loaded() and asks_the_model(query):
            # the first question in another language loads its identifier (about a second,
            # once): in a thread, so that the event loop serves everyone else meanwhile
            await asyncio.to_thread(load_model)
        now = self.clock() if as_of is None else as_of
        span = window(query, now) if "time" in arms else None
        topic = without_names(query) if "topic" in arms else ""
        if topic == " ".join(query.split()):
            topic = ""  # it names no one: the semantic arm already searches this
        # the learned ranker's candidates come from a search for each part of a question
        # that asks about several things at once too (recall/parts.py)
        pieces = parts(query) if wide and "parts" in arms else []
        texts = []
        if vector is None and ("semantic" in arms or span) and query.strip():
            texts.append(query)
        if topic:
            texts.append(topic)  # one embedding call for all, when several are needed
        texts += [p for p in pieces if p not in texts]
        embedded = dict(zip(texts, await self.embedder.embed_queries(texts), strict=True)) if texts else {}
        vectors = {"semantic": embedded.get(query, vector), "topic": embedded.get(topic)}
        vectors |= {f"part{i}": embedded[p] for i, p in enumerate(pieces, 1)}
        s = self.settings
        depth = (
            Depth(s.candidate_k, s.candidate_k, -1.0)
            if wide
            else Depth(s.semantic_k, s.lexical_k, s.semantic_floor)
        )
        if as_of is None:
            return await self._live(scope, query, vectors, now, arms, span, depth)
        return await self._past(scope, query, vectors, as_of, arms, span, depth)

    async def _live(
        self,
        scope: Scope,
        query: str,
        vectors: dict[str, np.ndarray | None],
        now: datetime,
        arms: Sequence[str],
        span: Window | None,
        depth: Depth,
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
            asks[arm] = Ask("nearest", (vector, model, depth.semantic))
        if "lexical" in arms:
            asks["lexical"] = Ask("lexical", (query, depth.lexical))
        if span is not None:
            asks["time"] = Ask("during", (span.start, span.end, s.time_k))
        answers = await self.store.arms(scope, asks, self.observer.recall_arm)
        found: dict[str, list[Fact]] = {a: answers[a] for a in ("pinned", "recency", "time") if a in answers}
        hits: dict[str, list[ScoredFact]] = {
            a: answers[a] for a in ("semantic", "topic", "lexical", *_PARTS) if a in answers
        }
        out: dict[str, list[tuple[Fact, float]]] = {}
        if "pinned" in found:
            out["pinned"] = [(f, 1.0) for f in found["pinned"] if f.is_valid_at(now)]
        if "recency" in found:
            out["recency"] = [(f, _age_hours(f, now)) for f in found["recency"] if f.is_valid_at(now)]
        for arm in ("semantic", "topic", *_PARTS):
            if arm in hits:
                out[arm] = [
                    (n.fact, n.score) for n in hits[arm] if n.score >= depth.floor and n.fact.is_valid_at(now)
                ]
        _join_parts(out)
        if "lexical" in hits:
            out["lexical"] = [(n.fact, n.score) for n in hits["lexical"] if n.fact.is_valid_at(now)]
        if "time" in found:
            out["time"] = await self._nearest_of(
                [f for f in found["time"] if f.is_valid_at(now)], scope, vectors, depth
            )
        return out

    async def _nearest_of(
        self, facts: list[Fact], scope: Scope, vectors: dict[str, np.ndarray | None], depth: Depth
    ) -> list[tuple[Fact, float]]:
        """The time arm: the facts of the window, nearest the query first, above the
        semantic floor (a query with a window always has a vector: it has words)."""
        vector = vectors.get("semantic")
        if vector is None or not facts:
            return []
        stored = await self.store.vectors(
            Scope(scope.user_id, all_agents=True), [f.id for f in facts], self.embedder.model_name
        )
        scored = [(f, float(np.dot(stored[f.id], vector))) for f in facts if f.id in stored]
        return sorted((x for x in scored if x[1] >= depth.floor), key=lambda x: -x[1])[: depth.semantic]

    async def _past(
        self,
        scope: Scope,
        query: str,
        vectors: dict[str, np.ndarray | None],
        at: datetime,
        arms: Sequence[str],
        span: Window | None,
        depth: Depth,
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
                scored = [x for x in scored if x[1] >= depth.floor]
                out[arm] = sorted(scored, key=lambda x: -x[1])[: depth.semantic]
            _join_parts(out)
        if "lexical" in arms:
            out["lexical"] = bm25(query, facts)[: depth.lexical]
        if span is not None:
            then = [f for f in facts if _in_span(f, span)]
            then.sort(key=lambda f: f.created_at, reverse=True)
            out["time"] = await self._nearest_of(then[: s.time_k], scope, vectors, depth)
        return out


def _retrieved(future: asyncio.Future[np.ndarray]) -> None:
    """Mark a failure of the second model's question as seen, whether it was awaited or not."""
    if not future.cancelled():
        future.exception()


async def _second_view(
    second: Second, scope: Scope, hits: Sequence[Hit], asked: asyncio.Future[np.ndarray] | None
) -> np.ndarray:
    """The second embedder's cosine of each hit with the question; NaN each (the ranker reads
    them as the first embedder saw them) while a hit has no vector of it yet, when there is no
    question to embed, when its question is not embedded within QUESTION_WAIT past the arms (the
    model loading, or busy filling in vectors), or when it fails."""
    missing = np.full(len(hits), np.nan)
    try:
        stored = await second.vectors(scope, hits)
        if stored is None or asked is None:
            return missing
        question = (await asyncio.wait_for(asyncio.shield(asked), QUESTION_WAIT))[0]
    except TimeoutError:
        return missing
    except Exception:  # the second model or its vectors failed: recall goes on without them
        log.exception("recall: the second embedder (%s) was left out of a recall", second.model_name)
        return missing
    return np.asarray(stored @ question, np.float64)


def above_floor(hit: Hit, floor: float) -> bool:
    """Whether a learned ranking keeps the hit: the candidates come with no similarity floor
    (the model weighs every cosine), but a fact that only the dense arms found, each below the
    floor, is noise to the person's assistant, and is not given."""
    dense = [r.score for arm, r in hit.reasons.items() if arm in _DENSE]
    return len(dense) < len(hit.reasons) or max(dense, default=floor) >= floor


_DENSE = frozenset({"semantic", "topic", "parts", "time"})


def _searched(vectors: dict[str, np.ndarray | None], arms: Sequence[str]) -> list[tuple[str, np.ndarray]]:
    """The vector arms asked for that have a vector to search with, and that vector (a question's
    parts have vectors only when they are to be searched)."""
    asked = [arm for arm in ("semantic", "topic") if arm in arms] + [p for p in _PARTS if p in vectors]
    return [(arm, v) for arm in asked if (v := vectors.get(arm)) is not None]


_PARTS = tuple(f"part{i}" for i in range(1, MAX_PARTS + 1))


def _join_parts(out: dict[str, list[tuple[Fact, float]]]) -> None:
    """The searches for the question's parts as one arm, "parts": each fact once, at the best
    cosine any part gave it, best first."""
    best: dict[str, tuple[Fact, float]] = {}
    for arm in _PARTS:
        for fact, score in out.pop(arm, ()):
            if fact.id not in best or score > best[fact.id][1]:
                best[fact.id] = (fact, score)
    if best:
        out["parts"] = sorted(best.values(), key=lambda x: -x[1])


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
