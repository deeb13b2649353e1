"""The receipts page: every erasure's receipt, newest first, each for people with Download and
Verify; a kept receipt checked by pasting it; an erased memory's page links its receipt."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import ok

pytestmark = pytest.mark.slow  # a browser against a real server


def test_receipts_are_listed_downloaded_verified_and_linked(signed_in: Page, api, shoot):
    first = ok(api.post("/v1/memories", json={"text": "My locker code is 4412"}), 201)
    second = ok(api.post("/v1/memories", json={"text": "I had a fight with Tom"}), 201)
    ok(api.delete(f"/v1/memories/{first['id']}", params={"purge": "true"}))
    ok(api.delete(f"/v1/memories/{second['id']}", params={"purge": "true"}))
    page = signed_in
    page.set_viewport_size({"width": 1280, "height": 900})
    page.get_by_role("link", name="Settings").click()
    page.get_by_role("link", name="Receipts of your erasures").click()
    rows = page.locator("#receipts > li")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("memory")
    expect(rows.first).to_contain_text("1 memory")
    shoot(page, "40-receipts", narrow=True)

    rows.first.get_by_role("link").click()
    expect(page.get_by_role("heading", name="Receipt of an erasure")).to_be_visible()
    with page.expect_download() as got:
        page.get_by_role("link", name="Download").click()
    kept = json.loads(got.value.path().read_text(encoding="utf-8"))
    assert kept["body"]["erased"]["facts"] == [second["id"]] and kept["signature"]
    page.get_by_role("button", name="Verify").click()
    expect(page.locator("#checked h2")).to_have_text("Valid")
    shoot(page, "41-receipt", narrow=True)

    # a kept receipt, pasted: valid as it was, not valid once changed
    page.goto("/erasures")
    page.get_by_label("The receipt's JSON").fill(json.dumps(kept))
    page.get_by_role("button", name="Check it").click()
    expect(page.locator("#checked h2")).to_have_text("Valid")
    kept["body"]["erased"]["facts"] = [first["id"]]
    page.get_by_label("The receipt's JSON").fill(json.dumps(kept))
    page.get_by_role("button", name="Check it").click()
    expect(page.locator("#checked h2")).to_have_text("Not valid")
    expect(page.locator("#checked")).to_contain_text("signature does not match")
    page.get_by_label("The receipt's JSON").fill('{"body": {}, "body": {}}')
    page.get_by_role("button", name="Check it").click()
    expect(page.locator("#checked")).to_contain_text("twice")
    page.get_by_label("The receipt's JSON").fill("[" * 5000)
    page.get_by_role("button", name="Check it").click()
    expect(page.locator("#checked")).to_contain_text("not a receipt's JSON")

    # the erased memory's page links the receipt of the erasure that took its text
    page.goto(f"/memories/{first['id']}")
    page.locator("#erased-by").get_by_role("link").click()
    expect(page.locator("pre.receipt")).to_contain_text(first["id"])
    assert page.goto("/erasures/01a0d3e4-0000-7000-8000-000000000000").status == 404
