"""`mnemo conversations list` and `show`, on both backends."""

from __future__ import annotations

import pytest

from tests.cli.test_cli import Invoke, as_json, ok

pytestmark = pytest.mark.slow  # the CLI, in-process


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "data"


@pytest.fixture
def mnemo(fresh_mnemo) -> Invoke:
    return fresh_mnemo


def test_conversations_are_listed_found_and_shown(mnemo: Invoke) -> None:
    ok(mnemo("remember", "-u", "Remember that I live in Lisbon", "-a", "Noted."))
    ok(mnemo("remember", "-u", "What is the weather like?", "-a", "Sunny."))
    listed = as_json(mnemo("conversations", "list", "--json"))
    assert [c["opening"] for c in listed] == ["What is the weather like?", "Remember that I live in Lisbon"]
    found = as_json(mnemo("conversations", "list", "--q", "lisbon", "--json"))
    assert [c["opening"] for c in found] == ["Remember that I live in Lisbon"]
    assert "Remember that I live in Lisbon" in ok(mnemo("conversations", "list")).stdout
    lisbon = found[0]["id"]
    shown = as_json(mnemo("conversations", "show", lisbon, "--json"))
    assert [m["content"] for m in shown["messages"]] == ["Remember that I live in Lisbon", "Noted."]
    assert [f["text"] for f in shown["memories"]] == ["I live in Lisbon"]
    human = ok(mnemo("conversations", "show", lisbon)).stdout
    assert "user: Remember that I live in Lisbon" in human
    assert "active  I live in Lisbon" in human.split("memories learnt from it", 1)[1]
    missing = mnemo("conversations", "show", "nope")
    assert missing.exit_code != 0 and "No conversation nope" in missing.stderr
    assert as_json(mnemo("conversations", "list", "--since", "2999-01-01", "--json")) == []
    quiet = as_json(mnemo("conversations", "remember", "quiet", "off", "--json"))
    assert (quiet["id"], quiet["remember"]) == ("quiet", False)
    assert "is not remembered" in ok(mnemo("conversations", "remember", "quiet", "off")).stdout
    too_far = mnemo("conversations", "list", "--offset", "99999999999999999999")
    assert too_far.exit_code == 2 and "--offset" in too_far.stderr
    # another person's are not theirs
    ok(mnemo("remember", "-u", "Remember that I live in Oslo", "-a", "Noted.", user="bob"))
    assert [c["opening"] for c in as_json(mnemo("conversations", "list", "--json", user="bob"))] == [
        "Remember that I live in Oslo"
    ]
    assert mnemo("conversations", "show", lisbon, user="bob").exit_code != 0
