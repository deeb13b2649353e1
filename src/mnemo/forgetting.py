"""What the person erased, known only by keyed hashes, so that it is never learnt again.

An erased fact's text is kept as HMAC-SHA256(server secret, user id, normalised
text), an erased message as the same of its id: never the text, and no hash
that a guess could be checked against without the server's secret (a short
text, a PIN, is quickly guessed from a plain hash). Learning (the extractor,
backfill) and import ask `dropped` before they keep anything, and say how many
they dropped. It matches the same words (domain.plain: case, spacing, final
punctuation, characters that show nothing, typographic quotes, apostrophes and dashes),
not a paraphrase. Digests kept before domain.plain (of domain.normalise's form) still
match: a text is looked up by both.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Protocol

from .domain import normalise, plain


class ErasedTexts(Protocol):
    async def erased(self, user_id: str, hashes: Sequence[str]) -> set[str]: ...


class Secrets(Protocol):
    async def secret(self, name: str) -> str:
        """A random server-side secret kept in the store, the same for every process."""


class Forgotten:
    def __init__(self, store: ErasedTexts, secrets: Secrets) -> None:
        self._store = store
        self._secrets = secrets
        self._key: bytes | None = None

    async def _hash(self, user_id: str, kind: str, values: Sequence[str]) -> list[str]:
        if self._key is None:
            self._key = (await self._secrets.secret("erased-texts")).encode()
        return [
            hmac.new(self._key, f"{kind}\0{user_id}\0{v}".encode(), hashlib.sha256).hexdigest()
            for v in values
        ]

    async def of_texts(self, user_id: str, texts: Sequence[str]) -> list[str]:
        """The digest an erasure keeps of each text: of its plain form."""
        return await self._hash(user_id, "text", [plain(t) for t in texts])

    async def known_by(self, user_id: str, texts: Sequence[str]) -> list[list[str]]:
        """Each text's digests that an erasure may have kept: of its plain form, and of the
        form digests were taken of before (domain.normalise), when that differs."""
        forms = [list(dict.fromkeys((plain(t), normalise(t)))) for t in texts]
        hashes = iter(await self._hash(user_id, "text", [f for each in forms for f in each]))
        return [[next(hashes) for _ in each] for each in forms]

    async def every_digest(self, user_id: str, texts: Sequence[str]) -> list[str]:
        """Every digest by which these texts may be known (see known_by), each once."""
        return list(dict.fromkeys(h for each in await self.known_by(user_id, texts) for h in each))

    async def of_messages(self, user_id: str, message_ids: Sequence[str]) -> list[str]:
        return await self._hash(user_id, "message", message_ids)

    async def dropped(self, user_id: str, texts: Sequence[str]) -> set[str]:
        """Those of `texts` the user erased (as the same words)."""
        known = await self.known_by(user_id, texts)
        erased = await self._store.erased(user_id, [h for each in known for h in each])
        return {t for t, each in zip(texts, known, strict=True) if erased.intersection(each)}

    async def dropped_messages(self, user_id: str, message_ids: Sequence[str]) -> set[str]:
        """Those of the message ids whose messages the user erased."""
        hashes = await self.of_messages(user_id, message_ids)
        erased = await self._store.erased(user_id, hashes)
        return {m for m, h in zip(message_ids, hashes, strict=True) if h in erased}
