"""Khoj's memory settings through HTTP: every server mode × every state of the person's switch."""

from __future__ import annotations

import itertools

import pytest

from tests.server.api import ok

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)

MODES = [None, "disabled", "enabled_default_off", "enabled_default_on"]
SWITCHES = [None, True, False]
# (server mode, user switch) → whether memory is on; the rule of Khoj's ServerChatSettings
EXPECTED = {
    (None, None): True,
    (None, True): True,
    (None, False): False,
    ("disabled", None): False,
    ("disabled", True): False,
    ("disabled", False): False,
    ("enabled_default_off", None): False,
    ("enabled_default_off", True): True,
    ("enabled_default_off", False): False,
    ("enabled_default_on", None): True,
    ("enabled_default_on", True): True,
    ("enabled_default_on", False): False,
}


@pytest.mark.parametrize(("mode", "switch"), list(EXPECTED), ids=lambda v: str(v).lower())
def test_the_me_payload_for_every_mode_and_switch(client, admin, mode, switch):
    assert ok(admin.patch("/v1/admin/settings", json={"memory_mode": mode}))["memory_mode"] == mode
    ok(client.patch("/v1/me/settings", json={"memory_enabled": switch}))
    me = ok(client.get("/v1/me"))
    assert me["enable_memory"] is EXPECTED[(mode, switch)]
    assert me["memory_enabled"] is switch
    assert me["server_memory_mode"] == (mode or "enabled_default_on")
    assert me["review_policy"] == "auto"
    # recall agrees with the payload
    found = ok(client.post("/v1/memories/search", json={"query": "x"}))
    assert found["enable_memory"] is EXPECTED[(mode, switch)]


def test_the_matrix_covers_every_case():
    assert set(EXPECTED) == set(itertools.product(MODES, SWITCHES))


def test_settings_answers_with_the_payload_and_null_resets_the_switch(client, admin):
    me = ok(client.patch("/v1/me/settings", json={"memory_enabled": False, "review_policy": "guarded"}))
    assert (me["enable_memory"], me["memory_enabled"], me["review_policy"]) == (False, False, "guarded")
    me = ok(client.patch("/v1/me/settings", json={"memory_enabled": None}))
    assert (me["enable_memory"], me["memory_enabled"], me["review_policy"]) == (True, None, "guarded")
    me = ok(client.patch("/v1/me/settings", json={"review_policy": "auto"}))
    assert me["memory_enabled"] is None  # left alone when not given
    for body in ({}, {"review_policy": None}, {"review_policy": "sometimes"}, {"memory_enabled": "maybe"}):
        assert client.patch("/v1/me/settings", json=body).status_code == 422, body
    assert ok(admin.get("/v1/admin/settings")) == {
        "memory_mode": None,
        "effective_memory_mode": "enabled_default_on",
    }
    assert admin.patch("/v1/admin/settings", json={}).status_code == 422  # null must be said
    assert admin.patch("/v1/admin/settings", json={"memory_mode": "sometimes"}).status_code == 422
