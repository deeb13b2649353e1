"""Full-text query handling shared by the stores: which words to search for, and whose."""

from __future__ import annotations

import hashlib
import re

from ..domain import normalise
from ..language import foreign, stop_words

_WORD = re.compile(r"\w+", re.UNICODE)
# Words that carry no signal in a question about a person's own facts.
_STOPWORDS = frozenset(
    "a an and are as at be but by did do does for from had has have how i if in into is it its"
    " me my of on or our so that the their them then there these they this to was we were what"
    " when where which who whom why will with you your".split()
)


def owner_token(user_id: str) -> str:
    return "u" + hashlib.sha256(user_id.encode()).hexdigest()[:24]


def query_words(text: str) -> list[str]:
    """The words to search for: without those that carry no signal, in English and, for a query
    in another language, in that one ("Wo wohnt meine Schwester?": wohnt, schwester). Only
    the query's own language's list: "son" is a word to search in English, not in French."""
    words = [w for w in (m.group().lower() for m in _WORD.finditer(text)) if w not in _STOPWORDS]
    code = foreign(text) if words else None
    if code is not None and code != "en":
        words = [w for w in words if w not in stop_words(code)]
    return list(dict.fromkeys(words))[:32]


# A term found in more than this share of all facts says little about any one of
# them, yet costs a walk over its whole posting list; below SMALL_STORE facts
# every term is kept (it is cheap there).
COMMON_TERM_SHARE = 0.05
SMALL_STORE = 2000


# -- the words of messages: what finds the messages that say a text (an erasure, "erase about") --

PHRASE_WORDS = 32  # a text's first words are enough to narrow the search


def message_words(user_id: str, text: str) -> list[str]:
    """The words of `text` as the index of messages holds them, in order: each run of word
    characters of its normalised form (domain.normalise: what domain.says compares), as a
    short hash keyed by the person (an index term is then one person's, and not the word).

    Whenever `says(message, text)`, the words of `text` are words of the message, in a row:
    `text` stands in the message between non-word characters (or its ends), so each run of
    word characters of `text` is one of the message's, whole, and they follow each other
    there as in `text`. Searching the index for them (a phrase on SQLite, an array that holds
    them all on PostgreSQL) never loses a message that the whole scan found; `says` confirms.
    A text without word characters ("🍵") has none: then every message is read."""
    key = user_id.encode(errors="surrogatepass") + b"\0"
    cache: dict[str, str] = {}
    out = []
    for run in _WORD.findall(normalise(text)):  # \w, as domain.says's lookarounds
        term = cache.get(run)
        if term is None:
            digest = hashlib.blake2b(key + run.encode(errors="surrogatepass"), digest_size=6)
            term = cache[run] = digest.hexdigest()
        out.append(term)
    return out
