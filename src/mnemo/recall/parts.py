"""The parts of a question that asks about several things at once.

"Which did I set up first, the smart thermostat or the mesh network system?",
"How many days passed between the day I fixed my bike and the day I upgraded
its pedals?", "the total cost of the food bowl, the dental chews and the flea
collar": one embedding of the whole question lands between its subjects and
near neither, so the learned ranker's candidates also come from a semantic
search for each part (recall/recaller.py, the "parts" arm). A part is what
lies between commas and the words that join or compare ("and", "or",
"between", "compared to", "than", and their German, French, Spanish,
Portuguese and Italian kin); one with no word that carries meaning is
dropped. A question with fewer than two such parts has none.
"""

from __future__ import annotations

import re

from ..store.fulltext import query_words

MAX_PARTS = 3
_JOINS = re.compile(
    r"[,;]|\b(?:and|or|versus|vs|between|compared\s+(?:to|with)|than|"
    r"und|oder|zwischen|als|et|ou|entre|que|y|o|e|ou|ed|oppure|tra|fra)\b",
    re.IGNORECASE,
)


def parts(query: str) -> list[str]:
    """The question's parts, at most MAX_PARTS (those with the most meaningful words, in their
    order); empty unless there are two or more."""
    pieces = [" ".join(p.split()).strip(" ?!.¿¡") for p in _JOINS.split(query)]
    weighed = [(len(query_words(p)), i, p) for i, p in enumerate(pieces)]
    kept = [x for x in weighed if x[0] > 0]
    if len(kept) < 2:
        return []
    best = sorted(kept, key=lambda x: (-x[0], x[1]))[:MAX_PARTS]
    return [p for _, _, p in sorted(best, key=lambda x: x[1])]
