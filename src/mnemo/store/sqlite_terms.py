"""Which query words are worth a full-text search on SQLite, with their statistics kept a minute.

A word is looked up as facts_fts indexes it (the Porter stem of its unicode61
token), and a stem found in more than COMMON_TERM_SHARE of all facts is dropped
on a large store (fulltext.py). Stemming a word means writing it to a scratch
FTS5 table and reading that table's vocabulary back; with the stem's document
count that is four statements, about 0.2 ms per query. Both are kept per word
for `ttl` seconds: a stem never changes, and a document count a minute old only
moves the line between common and not by a few facts out of thousands. Counts
are numbers, not text; the words themselves leave the cache when they expire.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .fulltext import COMMON_TERM_SHARE, SMALL_STORE
from .sql.tx import marks

TTL_SECONDS = 60.0
MAX_WORDS = 4096
OWNER_SHARE = 0.5

SCRATCH = (
    "CREATE VIRTUAL TABLE temp.query_terms USING fts5 (text, tokenize = 'porter unicode61')",
    "CREATE VIRTUAL TABLE temp.query_terms_vocab USING fts5vocab (temp, query_terms, instance)",
)


class TermStats:
    """Per word: its stems and each stem's document count, read together and kept `ttl` seconds.

    Used under the store's lock, with the store's connection."""

    def __init__(
        self,
        ttl: float = TTL_SECONDS,
        max_words: int = MAX_WORDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.clock = clock
        self.max_words = max_words
        self._words: OrderedDict[str, tuple[float, list[tuple[str, int]]]] = OrderedDict()
        self._most: OrderedDict[str, tuple[float, bool]] = OrderedDict()

    def discriminative(self, conn: Any, words: list[str]) -> list[str]:
        """The query words worth searching: on a large store, those whose every stem is rare."""
        total = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM facts").fetchone()[0]
        if total < SMALL_STORE or not words:
            return words
        limit = COMMON_TERM_SHARE * total
        stats = self._stats(conn, words)
        return [w for w in words if any(df <= limit for _, df in stats[w])]

    def holds_most(self, conn: Any, user_id: str) -> bool:
        """Whether the person holds at least OWNER_SHARE of all facts (read once a minute).

        Then the search leaves the person's token out of its MATCH and keeps to them by the
        join's user rule alone. bm25() counts the documents of every phrase of a query, and
        the owner token's documents are all of the person's facts: 0.4 ms at 10k facts, 4 ms
        at 100k. The scores are the same (the owner column weighs 0), and the other words'
        documents are then mostly the person's own anyway."""
        now = self.clock()
        kept = self._most.get(user_id)
        if kept is None or kept[0] <= now:
            total = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM facts").fetchone()[0]
            mine = conn.execute("SELECT COUNT(*) FROM facts WHERE user_id = ?", (user_id,)).fetchone()[0]
            kept = (now + self.ttl, total > 0 and mine >= OWNER_SHARE * total)
            self._most[user_id] = kept
            self._most.move_to_end(user_id)
            while len(self._most) > self.max_words:
                self._most.popitem(last=False)
        return kept[1]

    def _stats(self, conn: Any, words: list[str]) -> dict[str, list[tuple[str, int]]]:
        now = self.clock()
        out: dict[str, list[tuple[str, int]]] = {}
        for w in words:
            kept = self._words.get(w)
            if kept is not None and kept[0] > now:
                out[w] = kept[1]
        missing = [w for w in words if w not in out]
        if missing:
            for w, stats in self._read(conn, missing).items():
                out[w] = stats
                self._words[w] = (now + self.ttl, stats)
                self._words.move_to_end(w)
            while len(self._words) > self.max_words:
                self._words.popitem(last=False)
        return out

    @staticmethod
    def _read(conn: Any, words: list[str]) -> dict[str, list[tuple[str, int]]]:
        conn.executemany("INSERT INTO temp.query_terms (rowid, text) VALUES (?, ?)", list(enumerate(words)))
        stems: dict[int, list[str]] = {}
        for term, row in conn.execute("SELECT term, doc FROM temp.query_terms_vocab"):
            stems.setdefault(row, []).append(term)
        conn.execute("DELETE FROM temp.query_terms")
        every = sorted({t for ts in stems.values() for t in ts})
        sql = f"SELECT term, doc FROM facts_fts_vocab WHERE term IN ({marks(len(every))})"
        df = dict(conn.execute(sql, every)) if every else {}
        return {w: [(t, df.get(t, 0)) for t in stems.get(i, [])] for i, w in enumerate(words)}
