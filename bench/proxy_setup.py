"""bench/proxy.py's set-up: the seeded database, and the two servers it runs in processes of their own.

python bench/proxy_setup.py --serve-upstream | --serve-mnemo PORT   (started by bench/proxy.py)
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.facts import make_facts
from mnemo.domain import Scope, Source, SourceKind
from mnemo.memory import Memory
from mnemo.providers.embed import LocalEmbedder
from mnemo.store.base import Store
from mnemo.write import changes

MODEL = "scripted-model"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def serve_upstream() -> None:
    import socketserver

    from tests.fakes.openai_server import ScriptedOpenAI

    # socketserver listens with a backlog of 5: 16 clients connecting at once
    # (it closes every connection, HTTP/1.0) would now and then be reset.
    socketserver.TCPServer.request_queue_size = 128

    upstream = ScriptedOpenAI()
    upstream.default_reply = "Sure, here is a short and friendly answer."
    upstream.start()
    print(upstream.base_url, flush=True)
    sys.stdin.read()  # until the parent closes our stdin


def serve_mnemo(port: int) -> None:
    import uvicorn

    from mnemo.app import create_app
    from mnemo.http.serving import uvicorn_options
    from mnemo.settings import Settings

    settings = Settings()
    app = create_app(settings)
    uvicorn.run(
        app, host="127.0.0.1", port=port, log_level="warning", access_log=False, **uvicorn_options(settings)
    )


def spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, __file__, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def open_store(data_dir: Path, database_url: str | None) -> Store:
    """The store the server will use: the SQLite file in `data_dir`, or the PostgreSQL database
    at `database_url` (a `postgresql://` URL)."""
    from mnemo.build import build_store
    from mnemo.settings import Settings

    return build_store(Settings(data_dir=data_dir, database_url=database_url))


async def seed(data_dir: Path, database_url: str | None, n: int, rng: random.Random) -> tuple[str, str]:
    """The user, its API key, and n facts, written before the server starts: (user id, key)."""
    now = datetime.now(UTC)
    store = open_store(data_dir, database_url)
    embedder = LocalEmbedder()
    memory = await Memory(store, embedder).open()
    user = await memory.accounts.user("local")
    _, token = await memory.accounts.create_api_key(user.id, "bench")
    facts = make_facts(rng, n, set(), 4)
    vectors = await embedder.embed([f.text for f in facts])
    batch = [
        changes.create(
            changes.new_fact(
                Scope(user.id),
                f.text,
                now=now - timedelta(days=60) * rng.random(),
                source=Source(SourceKind.IMPORT),
                embedding_model=embedder.model_name,
            ),
            v,
            "import",
        )
        for f, v in zip(facts, vectors, strict=True)
    ]
    await store.commit(user.id, batch, now)
    await memory.close()
    return user.id, token


async def switch_memory_off(data_dir: Path, database_url: str | None, user_id: str) -> None:
    """Through the database, beside the running server (which reads the switch on every request)."""
    store = open_store(data_dir, database_url)
    await store.open()
    await store.update_user(user_id, memory_enabled=False)
    await store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve-upstream", action="store_true")
    parser.add_argument("--serve-mnemo", type=int, metavar="PORT")
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream()
    elif args.serve_mnemo:
        serve_mnemo(args.serve_mnemo)
    else:
        parser.error("started by bench/proxy.py")


if __name__ == "__main__":
    main()
