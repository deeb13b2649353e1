"""Shared fixtures: a real store on each backend, the real local embedder, a settable clock.

`store` (and so `core`, `memory`, `alice`, …) is parametrised over SQLite and
PostgreSQL: every test that uses it runs on both.

`--backend=sqlite|postgres|citus|both|all` chooses the backends (default `both`:
SQLite and PostgreSQL; `citus`: the PostgreSQL store on a Citus cluster, its
tables distributed by migration 18; `all`: the three), and `-m "not slow"` leaves
out the slow tests: see tests/selection.py. So the store's and the core's suites
run on Citus with `pytest tests/store tests/core --backend=citus`.

`citus` and `citus_url` give a test a real Citus cluster (a coordinator and two
workers on loopback) and a database of its own there: such tests are marked
`citus`, and `-m "not citus"` leaves them out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime

import pytest

from mnemo.build import Core
from mnemo.domain import Scope
from mnemo.memory import Memory
from mnemo.providers.chat import OpenAIChatModel
from mnemo.providers.embed import LocalEmbedder
from mnemo.settings import Settings
from mnemo.store.base import Store
from mnemo.store.postgres import PostgresStore
from mnemo.store.sqlite import SQLiteStore
from tests.citus_server import MIGRATED, SessionCitus
from tests.fakes.fixtures import scripted_llm  # noqa: F401
from tests.fakes.openai_server import ScriptedOpenAI
from tests.helpers import Clock
from tests.postgres_server import SessionPostgres
from tests.selection import (  # noqa: F401  (pytest's hooks: --backend and the quick run)
    chosen_backends,
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_generate_tests,
    pytest_ignore_collect,
)
from tests.stopping import pytest_configure  # noqa: F401  (SIGTERM stops the run as Ctrl-C does)


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path)


@pytest.fixture(scope="session")
def postgres(request) -> Iterator[SessionPostgres]:
    """The session's PostgreSQL server (started on first use)."""
    if "postgres" not in chosen_backends(request.config):
        pytest.fail("this test needs PostgreSQL but --backend leaves it out: mark it @pytest.mark.backend")
    server = SessionPostgres()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres) -> Iterator[str]:
    """An empty, migrated database of this test's own (emptied or dropped afterwards)."""
    url = postgres.acquire()
    yield url
    postgres.release(url)


@pytest.fixture(scope="session")
def citus() -> Iterator[SessionCitus]:
    """The session's Citus cluster (built and started on first use)."""
    cluster = SessionCitus()
    yield cluster
    cluster.stop()


@pytest.fixture
def citus_url(citus) -> Iterator[str]:
    """A cluster database of this test's own: the coordinator's admin connection string, Citus and
    pgvector installed on every node, the workers registered (handed on or dropped afterwards)."""
    url = citus.acquire()
    yield url
    citus.release(url)


@pytest.fixture
def citus_store_url(citus) -> Iterator[str]:
    """A cluster database of this test's own holding mnemo's schema, distributed, and no rows
    (emptied or dropped afterwards)."""
    url = citus.acquire(MIGRATED)
    yield url
    citus.release(url, MIGRATED)


@pytest.fixture
def store_url(backend, request) -> str:
    """The connection string of this test's PostgreSQL or Citus database (the owner's)."""
    return request.getfixturevalue("citus_store_url" if backend == "citus" else "postgres_url")


@pytest.fixture
def other_store(backend, request, tmp_path, clock) -> Store:
    """An unopened store on a second, empty database of this test's backend (where an export
    is imported)."""
    if backend == "sqlite":
        return SQLiteStore(tmp_path / "other.db", clock=clock)
    if backend == "citus":
        cluster = request.getfixturevalue("citus")
        url = cluster.acquire(MIGRATED)
        request.addfinalizer(lambda: cluster.release(url, MIGRATED))
    else:
        server = request.getfixturevalue("postgres")
        url = server.acquire()
        request.addfinalizer(lambda: server.release(url))
    return PostgresStore(url, clock=clock, max_size=4)


@pytest.fixture
def backend(request) -> str:
    """The backend of this test: its parameter (see pytest_generate_tests) or its `backend` mark."""
    if hasattr(request, "param"):
        return request.param
    return request.node.get_closest_marker("backend").args[0]


@pytest.fixture
def database_url(backend, request) -> str | None:
    """MNEMO_DATABASE_URL for a process or CLI run on this test's backend: None (the SQLite file
    in the data dir) or a `postgresql://` URL of this test's database."""
    if backend == "sqlite":
        return None
    return SessionPostgres.as_url(request.getfixturevalue("store_url"))


@pytest.fixture
def make_store(backend, request, tmp_path) -> Callable[..., Store]:
    """Unopened stores on this test's database; each call gives another one on the same data."""
    if backend == "sqlite":
        return lambda **kw: SQLiteStore(tmp_path / "mnemo.db", **kw)
    url = request.getfixturevalue("store_url")
    return lambda **kw: PostgresStore(url, **{"max_size": 4, **kw})


@pytest.fixture
async def store(make_store, clock) -> AsyncIterator[Store]:
    s = make_store(clock=clock)
    await s.open()
    yield s
    await s.close()


@pytest.fixture
async def core(store, embedder, settings, clock) -> Core:
    """The core without a chat model: only explicit requests are learnt."""
    return Core(store, embedder, None, settings=settings, clock=clock)


@pytest.fixture
async def memory(core) -> Memory:
    return core.memory


@pytest.fixture
async def llm_core(
    store,
    embedder,
    settings,
    clock,
    scripted_llm: ScriptedOpenAI,  # noqa: F811
) -> AsyncIterator[Core]:
    """The core whose chat model is the scripted server, through the real client."""
    chat = OpenAIChatModel(scripted_llm.base_url, "test-key", "scripted-model", timeout=5, max_retries=0)
    yield Core(store, embedder, chat, settings=settings, clock=clock)
    await chat.aclose()


@pytest.fixture
async def llm_memory(llm_core) -> Memory:
    return llm_core.memory


@pytest.fixture
async def alice(memory) -> Scope:
    return Scope((await memory.accounts.user("alice")).id)


@pytest.fixture
async def bob(memory) -> Scope:
    return Scope((await memory.accounts.user("bob")).id)
