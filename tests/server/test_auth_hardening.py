"""Keys at rest, revocation on every surface, constant-time comparison, secrets kept out of logs,
and the limit on failed authentications (mnemo/auth.py), on both backends."""

from __future__ import annotations

import hashlib
import hmac
import signal
import subprocess
import sys
from collections.abc import Iterator

import httpx2
import psycopg
import pytest

from mnemo.auth import AuthLimiter
from mnemo.settings import AuthLimitSettings, Settings
from tests.fakes.live_server import LiveServer
from tests.server.api import client_for, ok
from tests.server.conftest import ADMIN_KEY
from tests.server.processes import ADMIN, Serve, environment

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)

LIMIT = 5  # failed authentications after which a wrong key gets 429, in the limited servers below
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
CHAT = {"model": "scripted-model", "messages": [{"role": "user", "content": "Hello there"}]}


def _wrong(token: str) -> str:
    """A well-formed key: the right id, a wrong secret."""
    key_id = token.split("_")[1]
    return f"mnemo_{key_id}_{'W' * 43}"


# --- the limiter itself, with a clock of our own ------------------------------------------

ID = "0123456789abcdef"  # a key id


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_address_is_limited_after_n_failures_until_the_oldest_is_a_window_old():
    clock = Clock()
    limiter = AuthLimiter(failures=3, window=10, clock=clock)
    limiter.failed("10.0.0.1", None)
    clock.now += 4
    limiter.failed("10.0.0.1", None)
    assert limiter.retry_after("10.0.0.1", None) is None  # two failures: not yet
    clock.now += 1
    assert limiter.failed("10.0.0.1", None) is None  # the failure that reaches the limit is not refused
    assert limiter.retry_after("10.0.0.1", None) == pytest.approx(5.0)  # the first one ages out in 5 s
    clock.now += 4.5
    assert limiter.retry_after("10.0.0.1", None) == pytest.approx(0.5)
    clock.now += 0.5
    assert limiter.retry_after("10.0.0.1", None) is None  # one try is free again...
    limiter.failed("10.0.0.1", None)
    assert limiter.retry_after("10.0.0.1", None) == pytest.approx(4.0)  # ...and a wrong one limits again


def test_a_failure_while_over_the_limit_is_answered_with_the_wait_and_counts_too():
    clock = Clock()
    limiter = AuthLimiter(failures=2, window=10, clock=clock)
    assert limiter.failed("10.0.0.1", None) is None
    clock.now += 1
    assert limiter.failed("10.0.0.1", None) is None
    clock.now += 1
    assert limiter.failed("10.0.0.1", None) == pytest.approx(9.0)  # the oldest is now the second
    clock.now += 8  # uncounted, the first failure would have aged out by now
    assert limiter.retry_after("10.0.0.1", None) == pytest.approx(1.0)  # a guesser who keeps on stays limited


def test_other_addresses_are_unaffected_and_count_on_their_own():
    clock = Clock()
    limiter = AuthLimiter(failures=2, window=60, clock=clock)
    for _ in range(2):
        limiter.failed("203.0.113.7", None)
    limiter.failed("2001:db8::1", None)
    assert limiter.retry_after("203.0.113.7", None) is not None
    assert limiter.retry_after("2001:db8::1", None) is None
    assert limiter.retry_after("198.51.100.2", None) is None
    limiter.failed("2001:db8::1", None)
    assert limiter.retry_after("2001:db8::1", None) is not None


def test_failures_count_per_address_and_per_key_id():
    limiter = AuthLimiter(failures=3, window=60, clock=Clock())
    for i in range(3):  # one key id guessed from three addresses
        assert limiter.failed(f"10.0.0.{i}", ID) is None
    assert limiter.retry_after("10.0.0.9", ID) is not None  # that key id, from anywhere
    assert limiter.retry_after("10.0.0.9", None) is None  # the address itself is not limited
    assert limiter.retry_after("10.0.0.9", "fedcba9876543210") is None  # nor another key id
    assert limiter.failed("10.0.0.9", ID) is not None


def test_memory_stays_bounded_by_expiry_and_by_the_cap():
    clock = Clock()
    limiter = AuthLimiter(failures=3, window=60, max_tracked=100, clock=clock)
    for i in range(1000):
        limiter.failed(f"10.1.{i // 256}.{i % 256}", f"{i:016x}")
    assert limiter.tracked() == (100, 100)  # addresses, key ids: the stalest went first
    last, last_id = "10.1.3.231", f"{999:016x}"  # the 1000th
    for _ in range(2):
        limiter.failed(last, None)
        limiter.failed("10.9.9.9", last_id)
    assert limiter.retry_after(last, None) is not None
    assert limiter.retry_after("10.9.9.8", last_id) is not None
    assert limiter.retry_after("10.1.0.0", f"{0:016x}") is None  # dropped: counting starts over
    clock.now += 61
    assert limiter.tracked() == (0, 0)  # every failure aged out


def test_zero_failures_means_no_limit():
    limiter = AuthLimiter(failures=0, window=60)
    for _ in range(100):
        assert limiter.failed("10.0.0.1", ID) is None
    assert limiter.retry_after("10.0.0.1", ID) is None and limiter.tracked() == (0, 0)


# --- the limit on a real server -------------------------------------------------------------


def _server_settings(tmp_path, scripted_llm, **changes) -> Settings:
    """A test deployment on SQLite only: the limiter keeps its count in memory and never touches
    the store, so a second backend would test nothing more."""
    scripted_llm.default_reply = "Hi!"
    return Settings(
        data_dir=tmp_path,
        admin_key=ADMIN_KEY,
        llm_base_url=scripted_llm.base_url,
        llm_model="scripted-model",
        worker=False,  # no learning needed here
        **changes,
    )


@pytest.fixture
def limited(tmp_path, scripted_llm) -> Iterator[LiveServer]:
    """A server that limits an address or a key id after LIMIT failures."""
    limit = AuthLimitSettings(failures=LIMIT, window_seconds=120)
    with LiveServer(_server_settings(tmp_path, scripted_llm, auth_limit=limit)) as live:
        yield live


@pytest.fixture
def defaults(tmp_path, scripted_llm) -> Iterator[LiveServer]:
    """A server with the default limit (20 failures a minute)."""
    with LiveServer(_server_settings(tmp_path, scripted_llm)) as live:
        yield live


@pytest.fixture
def behind_a_proxy(tmp_path, scripted_llm) -> Iterator[LiveServer]:
    """A limited server that takes the client's address from X-Forwarded-For, as from a proxy on
    loopback: so one test can send from many addresses."""
    limit = AuthLimitSettings(failures=LIMIT, window_seconds=120)
    settings = _server_settings(tmp_path, scripted_llm, auth_limit=limit, trusted_proxies="127.0.0.1")
    with LiveServer(settings) as live:
        yield live


def _attempt(server: LiveServer, surface: str, key: str, **headers: str) -> httpx2.Response:
    """Present `key` once on one surface."""
    url, bearer = server.base_url, {"Authorization": f"Bearer {key}", **headers}
    if surface == "api":
        return httpx2.get(f"{url}/v1/me", headers=bearer, timeout=30)
    if surface == "chat":
        return httpx2.post(f"{url}/v1/chat/completions", json=CHAT, headers=bearer, timeout=30)
    if surface == "mcp":
        return httpx2.post(f"{url}/mcp", json=INITIALIZE, headers={**bearer, **MCP_HEADERS}, timeout=30)
    assert surface == "web"
    return httpx2.post(f"{url}/signin", data={"key": key}, headers=headers, timeout=30)


SURFACES = ["api", "chat", "mcp", "web"]
ACCEPTED = {"api": 200, "chat": 200, "mcp": 200, "web": 303}


def _limited(reply: httpx2.Response, limit: int = 120) -> int:
    assert reply.status_code == 429, reply.text
    wait = int(reply.headers["retry-after"])
    assert 1 <= wait <= limit
    return wait


def _works_everywhere(server: LiveServer, token: str, **headers: str) -> None:
    """`token` is accepted on every surface, and so is the admin key."""
    for surface in SURFACES:
        reply = _attempt(server, surface, token, **headers)
        assert reply.status_code == ACCEPTED[surface], (surface, reply.text)
    assert "Hi!" in _attempt(server, "chat", token, **headers).text
    listed = httpx2.post(
        f"{server.base_url}/mcp",
        json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_memories"}},
        headers={"Authorization": f"Bearer {token}", **MCP_HEADERS, **headers},
        timeout=30,
    )
    assert listed.status_code == 200 and not listed.json()["result"]["isError"], listed.text
    page = httpx2.get(f"{server.base_url}/memories", cookies={"mnemo_session": token}, headers=headers)
    assert page.status_code == 200, page.text  # a signed-in browser too
    admin = {"Authorization": f"Bearer {ADMIN_KEY}", **headers}
    assert httpx2.get(f"{server.base_url}/v1/admin/settings", headers=admin).status_code == 200


@pytest.mark.parametrize("surface", SURFACES)
def test_valid_key_is_never_refused_for_others_failures(defaults, surface):
    token = defaults.token
    with client_for(defaults, token) as me:  # a key revoked but left in someone's script
        revoked = ok(me.post("/v1/me/keys", json={"name": "old script"}), 201)
        ok(me.delete(f"/v1/me/keys/{revoked['id']}"))
    wrong = [revoked["token"], "not-a-key-at-all"]
    replies = [_attempt(defaults, surface, wrong[i % 2]).status_code for i in range(25)]
    assert replies == [401] * 20 + [429] * 5  # the address is over the limit after 20
    _works_everywhere(defaults, token)
    for other in SURFACES:  # while a wrong key is told to wait, on every surface
        _limited(_attempt(defaults, other, _wrong(token)), 60)
    reply = _attempt(defaults, "api", "not-a-key-at-all")
    assert "too many failed authentications" in reply.json()["error"]["message"]


def test_failures_count_per_key_id(behind_a_proxy):
    server, token = behind_a_proxy, behind_a_proxy.token
    for i in range(LIMIT):  # one key id guessed from LIMIT addresses, once each
        reply = _attempt(server, SURFACES[i % 4], _wrong(token), **{"X-Forwarded-For": f"198.51.100.{i}"})
        assert reply.status_code == 401, reply.text
    fresh = {"X-Forwarded-For": "198.51.100.77"}
    for surface in SURFACES:  # that key id is limited from any address, on every surface...
        _limited(_attempt(server, surface, _wrong(token), **fresh))
    # ...but the key itself still works, from everywhere
    _works_everywhere(server, token, **fresh)
    _works_everywhere(server, token, **{"X-Forwarded-For": "198.51.100.0"})
    # and the address that sent those guesses is not limited for another key id
    assert _attempt(server, "api", "mnemo_0123456789abcdef_" + "W" * 43, **fresh).status_code == 401


@pytest.mark.parametrize("surface", SURFACES)
def test_wrong_keys_on_any_surface_are_told_to_wait_on_every_surface(limited, surface):
    token = limited.token
    for _ in range(LIMIT):
        assert _attempt(limited, surface, _wrong(token)).status_code == 401
    # Over the limit: a wrong key gets 429 on every surface, the wrong admin key too...
    for other in SURFACES:
        _limited(_attempt(limited, other, _wrong(token)))
    _limited(
        httpx2.get(f"{limited.base_url}/v1/admin/settings", headers={"Authorization": f"Bearer {ADMIN_KEY}x"})
    )
    reply = httpx2.get(f"{limited.base_url}/v1/me", headers={"Authorization": f"Bearer {_wrong(token)}"})
    assert "too many failed authentications" in reply.json()["error"]["message"]
    # ...while the right key, the admin key and a signed-in browser go on working
    _works_everywhere(limited, token)
    # a browser whose cookie holds a wrong key is sent to the sign-in page, which says why and drops it
    cookies = {"mnemo_session": _wrong(token)}
    page = httpx2.get(f"{limited.base_url}/memories", cookies=cookies)
    assert page.status_code == 303 and page.headers["location"].startswith("/signin")
    signin = httpx2.get(f"{limited.base_url}/signin", cookies=cookies)
    _limited(signin)
    assert "Too many wrong keys" in signin.text
    assert signin.headers["set-cookie"].startswith('mnemo_session="";')


def test_successes_and_requests_without_a_key_count_nothing(limited):
    token = limited.token
    for surface in SURFACES:
        for _ in range(LIMIT + 1 if surface == "api" else 2):
            reply = _attempt(limited, surface, token)
            assert reply.status_code == ACCEPTED[surface], (surface, reply.text)
    for _ in range(LIMIT + 1):
        assert httpx2.get(f"{limited.base_url}/v1/me").status_code == 401
        assert (
            httpx2.get(f"{limited.base_url}/v1/me", headers={"Authorization": "Basic eDp5"}).status_code
            == 401
        )
    assert _attempt(limited, "api", token).status_code == 200
    # one failure short of the limit a wrong key is still answered 401
    for _ in range(LIMIT - 1):
        assert _attempt(limited, "api", _wrong(token)).status_code == 401
    assert _attempt(limited, "api", token).status_code == 200
    assert _attempt(limited, "api", _wrong(token)).status_code == 401
    _limited(_attempt(limited, "api", _wrong(token)))
    assert _attempt(limited, "api", token).status_code == 200


def test_the_429_and_its_retry_after_are_in_the_api_schema(limited):
    schema = httpx2.get(f"{limited.base_url}/openapi.json", timeout=60).json()
    for path, methods in schema["paths"].items():
        if path in ("/healthz", "/readyz"):  # no key asked, none refused
            continue
        for method, operation in methods.items():
            answer = operation["responses"].get("429")
            assert answer is not None, (method, path)
            assert "Retry-After" in answer["headers"], (method, path)


# --- the client's address behind a reverse proxy -------------------------------------------


@pytest.mark.parametrize("trusted", [False, True])
def test_forwarded_for_is_ignored_unless_the_proxy_is_trusted(tmp_path, scripted_llm, trusted):
    env = environment(tmp_path / "data", scripted_llm)
    if trusted:
        env["MNEMO_TRUSTED_PROXIES"] = "127.0.0.1"
    else:
        env["FORWARDED_ALLOW_IPS"] = "*"  # uvicorn's own setting must not widen mnemo's
    served = Serve(env, tmp_path / "serve.log")
    try:
        url = f"{served.base_url}/v1/me"

        def attempt(key: str, forwarded: str | None) -> int:
            headers = {"Authorization": f"Bearer {key}"}
            if forwarded is not None:
                headers["X-Forwarded-For"] = forwarded
            return httpx2.get(url, headers=headers, timeout=30).status_code

        replies = [attempt(f"wrong-key-{i}", f"203.0.113.{i}") for i in range(25)]
        if not trusted:  # all of them came from 127.0.0.1, whatever the header said
            assert replies == [401] * 20 + [429] * 5
            assert attempt("wrong-key", "203.0.113.99") == 429
        else:  # each from the address its proxy forwarded
            assert replies == [401] * 25
            for _ in range(20):
                assert attempt("wrong-key", "203.0.113.200") == 401
            assert attempt("wrong-key", "203.0.113.200") == 429
            assert attempt("wrong-key", "203.0.113.201") == 401
            assert attempt("wrong-key", None) == 401  # the proxy's own address counts on its own
        assert attempt(served.token, "203.0.113.200") == 200
    finally:
        served.stop()


def test_trusted_proxies_are_addresses_or_networks():
    settings = Settings(trusted_proxies=" 10.0.0.2, 172.16.0.0/12 ,::1")
    assert settings.trusted_proxies == ["10.0.0.2", "172.16.0.0/12", "::1"]
    assert Settings().trusted_proxies == []
    with pytest.raises(ValueError, match=r"proxy\.example"):
        Settings(trusted_proxies="proxy.example")


# --- revocation on the surfaces the other tests leave out ----------------------------------


def test_a_revoked_key_stops_at_once_on_the_chat_proxy_and_mcp(server, client, scripted_llm):
    scripted_llm.default_reply = "Hi!"
    created = ok(client.post("/v1/me/keys", json={"name": "assistant"}), 201)
    key = created["token"]
    for surface in ("chat", "mcp", "api"):
        reply = _attempt(server, surface, key)
        assert reply.status_code == 200, (surface, reply.text)
    assert "Hi!" in _attempt(server, "chat", key).text
    assert _attempt(server, "mcp", key).json()["result"]["serverInfo"]["name"]
    ok(client.delete(f"/v1/me/keys/{created['id']}"))
    for surface in ("chat", "mcp", "api"):
        reply = _attempt(server, surface, key)
        assert reply.status_code == 401, (surface, reply.text)
        assert reply.headers["www-authenticate"] == "Bearer"
    assert _attempt(server, "web", key).status_code == 401  # nor can it sign in again
    assert _attempt(server, "chat", server.token).status_code == 200  # the other key still works


# --- keys at rest ------------------------------------------------------------------------------


def _database_text(server_settings, backend, request) -> str:
    """Everything the database holds, as text: the SQLite files' bytes, or every row of every
    PostgreSQL table as JSON (read as the database's owner, past row-level security)."""
    if backend == "sqlite":
        files = sorted(server_settings.data_dir.glob("mnemo.db*"))
        assert files
        return "".join(f.read_bytes().decode("latin-1") for f in files)
    with psycopg.connect(request.getfixturevalue("store_url")) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
        assert ("public", "api_keys") in tables
        rows = [
            row[0]
            for schema, table in tables
            for row in conn.execute(f'SELECT row_to_json(t)::text FROM "{schema}"."{table}" t').fetchall()
        ]
    return "\n".join(rows)


def _secret(token: str) -> str:
    return token.split("_", 2)[2]


def test_keys_are_stored_only_as_hashes(server, server_settings, client, admin, backend, request):
    made = [server.token]
    made.append(ok(client.post("/v1/me/keys", json={"name": "laptop"}), 201)["token"])
    made.append(ok(admin.post("/v1/admin/users", json={"name": "bob"}), 201)["key"]["token"])
    revoked = ok(client.post("/v1/me/keys", json={"name": "old"}), 201)
    ok(client.delete(f"/v1/me/keys/{revoked['id']}"))
    made.append(revoked["token"])
    stored = _database_text(server_settings, backend, request)
    for token in made:
        key_id, secret = token.split("_")[1], _secret(token)
        assert key_id in stored  # the rows are there: the id is stored in clear, to look the key up
        assert secret not in stored and token not in stored
        assert hashlib.sha256(secret.encode()).hexdigest() in stored  # and the secret only as its hash
    assert ADMIN_KEY not in stored


# --- constant-time comparison ------------------------------------------------------------------


def test_keys_and_the_admin_key_are_compared_by_hmac_compare_digest(server, monkeypatch):
    compared: list[tuple[bytes | str, bytes | str]] = []
    real = hmac.compare_digest
    verdict = {"admin": True}

    def spy(a, b):
        compared.append((a, b))
        if b == ADMIN_KEY.encode():
            return verdict["admin"]
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    with client_for(server, ADMIN_KEY) as admin:
        assert admin.get("/v1/admin/settings").status_code == 200
        assert compared == [(ADMIN_KEY.encode(), ADMIN_KEY.encode())]
        verdict["admin"] = False  # the answer of compare_digest is the one that counts
        assert admin.get("/v1/admin/settings").status_code == 401
    compared.clear()
    with client_for(server, server.token) as user:
        assert user.get("/v1/me").status_code == 200
    # a user's key: the admin key is checked first, then the one stored hash its id names
    stored = hashlib.sha256(_secret(server.token).encode()).hexdigest()
    assert compared == [(server.token.encode(), ADMIN_KEY.encode()), (stored, stored)]


# --- no secret in the logs ---------------------------------------------------------------------

SERVE = """
import logging, sys
import uvicorn
from mnemo.app import create_app
from mnemo.settings import Settings
logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
uvicorn.run(create_app(Settings.load()), host="127.0.0.1", port=int(sys.argv[-1]), log_level="debug")
"""


@pytest.fixture
def debug_server(tmp_path, scripted_llm, database_url) -> Iterator[tuple[str, str, subprocess.Popen]]:
    """A server process with every logger at DEBUG; (its URL, its first key, the process)."""
    scripted_llm.default_reply = "Hi!"
    env = environment(tmp_path / "data", scripted_llm, database_url)
    served = Serve(env, tmp_path / "server.log", command=(sys.executable, "-c", SERVE))
    try:
        assert served.token, served.log.read_text()
        yield served.base_url, served.token, served.process
    finally:
        if served.process.poll() is None:
            served.kill()


def test_no_key_reaches_the_logs(debug_server, tmp_path):
    url, first, process = debug_server
    secrets = {ADMIN: "admin key", ADMIN + "x": "wrong admin key", _wrong(first): "wrong key"}
    with httpx2.Client(base_url=url, headers={"Authorization": f"Bearer {first}"}, timeout=30) as me:
        ok(me.get("/v1/me"))
        laptop = ok(me.post("/v1/me/keys", json={"name": "laptop"}), 201)
        secrets[laptop["token"]] = "a created key"
        with httpx2.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30) as admin:
            bob = ok(admin.post("/v1/admin/users", json={"name": "bob"}), 201)["key"]["token"]
            ok(admin.get("/v1/admin/settings"))
        secrets[bob] = "a key the admin made"
        bearer = {"Authorization": f"Bearer {laptop['token']}"}
        assert httpx2.post(f"{url}/v1/chat/completions", json=CHAT, headers=bearer).status_code == 200
        mcp = httpx2.post(f"{url}/mcp", json=INITIALIZE, headers={**bearer, **MCP_HEADERS})
        assert mcp.status_code == 200
        assert httpx2.post(f"{url}/signin", data={"key": laptop["token"]}).status_code == 303
        for wrong in (ADMIN + "x", _wrong(first)):
            assert httpx2.get(f"{url}/v1/me", headers={"Authorization": f"Bearer {wrong}"}).status_code == 401
            assert httpx2.post(f"{url}/signin", data={"key": wrong}).status_code == 401
        ok(me.delete(f"/v1/me/keys/{laptop['id']}"))
        assert httpx2.get(f"{url}/v1/me", headers=bearer).status_code == 401
        assert httpx2.get(f"{url}/memories", cookies={"mnemo_session": laptop["token"]}).status_code == 303
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=15)
    output = (tmp_path / "server.log").read_text()
    assert "DEBUG" in output and '"POST /v1/me/keys HTTP/1.1" 201' in output  # it did log, in detail
    # the first key is printed once on purpose (the only time it exists in clear), never again
    assert output.count(_secret(first)) == 1 and "API key (shown once)" in output
    for secret, what in secrets.items():
        assert secret not in output, what
        if secret.startswith("mnemo_"):
            assert _secret(secret) not in output, what
