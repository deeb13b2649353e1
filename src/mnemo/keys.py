"""API keys: `mnemo_<id>_<secret>`. Only a hash of the secret is stored; it is shown once."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import datetime

from .domain import ApiKey

_TOKEN = re.compile(r"^mnemo_([0-9a-f]{16})_([A-Za-z0-9_-]{20,128})$")
_KEY_ID = re.compile(r"^[0-9a-f]{16}$")


def _hash(secret: str) -> str:
    # The secret has 256 bits of entropy, so a plain SHA-256 is enough: there is
    # nothing to brute-force that a slow hash would protect.
    return hashlib.sha256(secret.encode()).hexdigest()


def new_key(user_id: str, name: str, now: datetime) -> tuple[ApiKey, str]:
    """A new key and the token to hand to its owner (never stored)."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    return ApiKey(key_id, user_id, name, _hash(secret), now), f"mnemo_{key_id}_{secret}"


def parse(token: str) -> tuple[str, str] | None:
    """(key id, secret) of a well-formed token, else None."""
    match = _TOKEN.match(token)
    return (match.group(1), match.group(2)) if match else None


def is_key_id(value: str) -> bool:
    """Whether `value` can be a key's id (what a token names, and the API and the page show)."""
    return bool(_KEY_ID.match(value))


def matches(key: ApiKey, secret: str) -> bool:
    """Timing-safe comparison of a presented secret with the stored hash."""
    return hmac.compare_digest(key.secret_hash, _hash(secret))


def same_secret(presented: str, expected: str) -> bool:
    """Timing-safe comparison of two plain secrets (the admin key from settings)."""
    return hmac.compare_digest(presented.encode(), expected.encode())
