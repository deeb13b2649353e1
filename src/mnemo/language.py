"""Which language a query is in, where recall must know: py3langid, in-process; and the
words of that language that carry no signal in a search (the stop-words package).

Its model loads once per process (about a second; the server does it at start-up,
`warm`), then a text takes about 0.1 ms.
"""

from __future__ import annotations

import threading
from functools import cache
from typing import Any

# Languages that write every noun with a capital, so that a capital does not mark a name.
NOUNS_CAPITALISED = frozenset({"de", "lb"})
_lock = threading.Lock()


def language(text: str) -> str:
    """The ISO 639-1 code of the language `text` is most likely in."""
    code, _ = _identifier().classify(text)
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


def warm() -> None:
    """Load the model now rather than on the first query that needs it."""
    _identifier()


@cache
def _loaded() -> Any:
    import py3langid

    py3langid.classify("")  # loads its model
    return py3langid


def _identifier() -> Any:
    with _lock:  # one load, even when several threads ask at once
        return _loaded()
