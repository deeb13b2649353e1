"""The signed receipt of an erasure: what went, by ids, counts, kinds and times, never a text.

A receipt's body is signed with the server's Ed25519 key (made from a secret kept
in the store, so every process sharing the store signs alike) over its canonical
JSON: sorted keys, no spaces, ASCII. The body names the public key that signed
it, but a check trusts only the key it is given: the server's own (`mnemo audit
verify-receipt` where the database is, or GET /v1/erasures/key published
beforehand); a forged receipt can name a key of its own.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from .domain import Receipt

FORMAT = 1
SigningKey = Ed25519PrivateKey


def signing_key(secret: str) -> Ed25519PrivateKey:
    """The server's key, from its stored secret (any text: it is hashed to the key's seed)."""
    return Ed25519PrivateKey.from_private_bytes(
        hashlib.sha256(b"mnemo receipts\0" + secret.encode()).digest()
    )


def public_key(key: Ed25519PrivateKey) -> str:
    """The key that checks its signatures, as base64 of its 32 raw bytes."""
    raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def seal(
    key: Ed25519PrivateKey,
    *,
    receipt_id: str,
    user_id: str,
    at: datetime,
    kind: str,
    erased: dict[str, Any],
    chain_head: str,
) -> Receipt:
    body = {
        "format": FORMAT,
        "receipt": receipt_id,
        "user": user_id,
        "at": at.isoformat(),
        "kind": kind,
        "erased": erased,
        "chain_head": chain_head,
        "public_key": public_key(key),
    }
    signature = base64.b64encode(key.sign(canonical(body))).decode()
    return Receipt(receipt_id, user_id, at, kind, body, signature)


def document(receipt: Receipt) -> dict[str, Any]:
    """The receipt as it is handed out and kept by the person: its body and signature."""
    return {"body": receipt.body, "signature": receipt.signature}


class DuplicateKey(ValueError):
    """A JSON object names one key twice: which value counts is up to each reader."""


def parsed(text: str | bytes) -> Any:
    """A receipt's JSON, parsed; DuplicateKey (a ValueError) when an object names a key twice,
    since one reader would check the signature over the last value and another show the first."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                raise DuplicateKey(f"it names the key {key[:40]!r} twice in one object")
            seen[key] = value
        return seen

    return json.loads(text, object_pairs_hook=pairs)


def problems(doc: Any, trusted_key: str) -> list[str]:
    """Why `doc` (a receipt as `document` gives it, parsed from JSON) is not a receipt signed by
    `trusted_key` (base64 of an Ed25519 public key); empty when it is."""
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("body"), dict)
        or not isinstance(doc.get("signature"), str)
    ):
        return ["not a receipt: expected an object with 'body' (an object) and 'signature' (text)"]
    body = doc["body"]
    if body.get("public_key") != trusted_key:
        return ["it names a key that is not this server's"]
    try:
        signature = base64.b64decode(doc["signature"], validate=True)
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(trusted_key, validate=True))
        key.verify(signature, canonical(body))
    except (InvalidSignature, ValueError):
        return ["the signature does not match its body: it was changed, or never signed by this server"]
    return []
