"""Which language a query is in, where recall must know: py3langid, in-process; and the
words of that language that carry no signal in a search (the stop-words package).

Its model loads once per process, on first need (about a second), then a text takes about
0.1 ms. Most English never needs it: `foreign` asks the model only about a text that holds a
function word of another language (14 of LoCoMo's 999 questions: "son", "car", "met").
"""

from __future__ import annotations

import re
import threading
from functools import cache
from typing import Any

# Languages that write every noun with a capital, so that a capital does not mark a name.
NOUNS_CAPITALISED = frozenset({"de", "lb"})
# The languages whose function words tell that a text may not be English (mnemo's explicit
# requests and time expressions read these too).
OTHERS = ("de", "fr", "es", "pt", "it", "nl", "ru")
_WORD = re.compile(r"\w+")
_lock = threading.Lock()


def foreign(text: str) -> str | None:
    """The language of a text that holds a function word of another language than English
    ("ich", "mon", "donde", "моя"), as the model tells it (which may still be "en"); None for
    one that holds none, without loading the model."""
    return language(text) if asks_the_model(text) else None


def asks_the_model(text: str) -> bool:
    """Whether `foreign` asks the model about this text (and so, the first time, loads it)."""
    return not {w.lower() for w in _WORD.findall(text)}.isdisjoint(_others_words())


def model_loaded() -> bool:
    return _loaded.cache_info().currsize > 0


def load_model() -> None:
    """Load the model now (about a second, once per process): for a caller that would rather
    not wait for it where it cannot block, such as an event loop."""
    _identifier()


def language(text: str) -> str:
    """The ISO 639-1 code of the language `text` is most likely in."""
    # a lone surrogate cannot be encoded for the model: it is no letter of any language
    code, _ = _identifier().classify(text.encode("utf-8", "replace").decode("utf-8"))
    return str(code)


@cache
def stop_words(code: str) -> frozenset[str]:
    """The words of language `code` that say nothing of a fact ("ich", "mein", "donde"); none
    for a language the list does not know."""
    from stop_words import StopWordError, get_stop_words

    try:
        return frozenset(get_stop_words(code))
    except StopWordError:
        return frozenset()


@cache
def _others_words() -> frozenset[str]:
    """Function words of the other languages that are not also English ones ("in", "so")."""
    english = stop_words("en")
    return frozenset(w for code in OTHERS for w in stop_words(code) if w not in english)


@cache
def _loaded() -> Any:
    import py3langid

    py3langid.classify("")  # loads its model
    return py3langid


def _identifier() -> Any:
    with _lock:  # one load, even when several threads ask at once
        return _loaded()
