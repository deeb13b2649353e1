"""The names a question holds: what the "topic" arm leaves out, and what the ranker looks for."""

from __future__ import annotations

import re

from ..language import NOUNS_CAPITALISED, foreign

_WORD = re.compile(r"\w+")
# A capitalised word that does not open a sentence (with its possessive): a name.
# Single capitals ("I") and acronyms ("LGBTQ") are not names here; nor is the first
# word after an opening mark ("¿Dónde…", "«Wo…").
_NAME = re.compile(r"(?<![.!?:]\s)(?<![¿¡«„“\"(])(?<!^)\b[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+(?:['’]s\b)?")
_POSSESSIVE = re.compile(r"['’]s$")


def _names_anything(query: str) -> bool:
    """Whether a capital in the query can tell a name: one is there, and the query is not in a
    language that capitalises every noun (German: "Welches Instrument spiele ich?" names no one)."""
    return bool(_NAME.search(query)) and foreign(query) not in NOUNS_CAPITALISED


def without_names(query: str) -> str:
    """The query with its names taken out: what the "topic" arm embeds.

    A small embedder puts a name in a question ("What does Melanie do to
    destress?") close to every fact that names the same person, whatever the
    fact is about, so the nearest facts are the person's rather than the
    topic's. The topic arm searches with the name-free question; the names
    still count through the semantic and lexical arms (and the ranker's
    `named`). Empty when nothing is left; the query itself when it names no one.
    """
    if not _names_anything(query):
        return query
    stripped = " ".join(_NAME.sub(" ", query).split())
    return stripped if _WORD.search(stripped) else ""


MOST_NAMES = 32  # as many as the lexical arm searches words: a long message costs no more


def names(query: str) -> list[str]:
    """The names the query holds, lower-cased, without a possessive, each once, in order; the
    first MOST_NAMES of them."""
    if not _names_anything(query):
        return []
    found = dict.fromkeys(_POSSESSIVE.sub("", m.group()).lower() for m in _NAME.finditer(query))
    return list(found)[:MOST_NAMES]
