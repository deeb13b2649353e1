"""Realistic secrets and identifiers, and a look at every byte a store wrote: the sensitive-data
gate's tests read the database files themselves, not what the store answers."""

from __future__ import annotations

from pathlib import Path

import psycopg

# (what a person says, the part of it that must never be written, its category)
SAID = [
    ("Use sk_live_4eC39HqLyjWDarjtT1zdp7dc for the shop", "4eC39HqLyjWDarjtT1zdp7dc", "credential"),
    ("The AWS key id is AKIAZ7QPLMXV4RTY2KWB", "AKIAZ7QPLMXV4RTY2KWB", "credential"),
    (
        "aws secret key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYzqkey83Xy",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzqkey83Xy",
        "credential",
    ),
    (
        "my github token ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "16C7e42F292c6912E7710c838347Ae178B4a",
        "credential",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7BFUrk2mQpLtR9\nZx4TbVn8w3Kd\n"
        "-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAq7BFUrk2mQpLtR9",
        "credential",
    ),
    ("my password is hunter2!x7", "hunter2!x7", "credential"),
    ("the db is postgres://app:Sw0rdfish9@db.internal:5432/main", "Sw0rdfish9", "credential"),
    ("My card is 4242 4242 4242 4242", "4242 4242 4242 4242", "card"),
    ("Charge 4242-4242-4242-4242 please", "4242-4242-4242-4242", "card"),
    ("My IBAN is DE89 3704 0044 0532 0130 00", "3704 0044 0532", "bank_account"),
    ("My SSN is 078-05-1120", "078-05-1120", "government_id"),
    ("Mi DNI es 12345678Z", "12345678Z", "government_id"),
]
# what a mask keeps, by category, for the texts above under the defaults
MASKS = {
    "card": "[card ending 4242]",
    "bank_account": "[bank account ending 3000]",
    "government_id": "[government id]",
}
# ordinary numbers the gate must leave as they are
ORDINARY = [
    "I ran 10000 steps on 2024-05-03",
    "The laptop cost $1,299.99 and the order number is 4242424242424241",
    "Order #123-45-67890 ships on 12/03/2025",
    "Call me at extension 4471, room 1234 5678",
    "The password is too short, said the site",
    "Pope Innocent X reigned 1644-1655",
    "My bank PIN is 442618",
]


def needles() -> list[bytes]:
    return [needle.encode() for _, needle, _ in SAID]


def sqlite_bytes(data_dir: Path) -> bytes:
    """Every file of a SQLite store (the database, its write-ahead log, anything beside it)."""
    return b"".join(p.read_bytes() for p in sorted(data_dir.rglob("*")) if p.is_file())


_RELATION_FILES = (
    "SELECT c.relname, pg_read_binary_file(pg_relation_filepath(c.oid)) FROM pg_class c"
    " WHERE pg_relation_filepath(c.oid) IS NOT NULL AND c.relkind IN ('r', 'i', 't')"
    " AND c.relnamespace IN (current_schema()::regnamespace, 'pg_toast'::regnamespace)"
)


def postgres_bytes(url: str) -> bytes:
    """Every table, index and TOAST file of the store's schema after a checkpoint (dead row
    versions included: what was written once and deleted is still there), and every text
    column's value as a query reads it."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        files = b"".join(bytes(data) for _, data in conn.execute(_RELATION_FILES))
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            )
        ]
        rows = b"".join(str(row).encode() for t in tables for row in conn.execute(f'SELECT * FROM "{t}"'))
    return files + rows


def start_clean(store) -> None:
    """PostgreSQL (a store, or its URL): rewrite the tables' files first, so that what an
    earlier test on this pooled database wrote (kept in them as dead row versions) is not taken
    for this test's."""
    url = store if isinstance(store, str) else getattr(store, "url", None)
    if url:
        with psycopg.connect(url, autocommit=True) as conn:
            tables = conn.execute(
                "SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables"
                " WHERE schemaname = current_schema()"
            ).fetchone()
            conn.execute(f"VACUUM FULL {tables[0]}")


def stored_bytes(store, data_dir: Path) -> bytes:
    """What the store wrote: its files (SQLite) or its tables' files and rows (PostgreSQL)."""
    url = getattr(store, "url", None)
    return postgres_bytes(url) if url else sqlite_bytes(data_dir)
