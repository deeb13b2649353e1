"""audit.py: the hash chain of the audit log, its verification, redaction, and past belief."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import timedelta

import pytest

from mnemo import audit
from mnemo.domain import Action, AuditReport, Change, Event, Status
from mnemo.write import changes
from tests.unit.helpers import NOW, fact


def chained(*made: Change, user_id: str = "u") -> list[Event]:
    """The events the store would write for these changes, a minute apart, numbered from 1."""
    events, prev = [], audit.GENESIS
    for seq, change in enumerate(made, start=1):
        event = replace(audit.seal(change, user_id, NOW + timedelta(minutes=seq), prev), seq=seq)
        events.append(event)
        prev = event.hash
    return events


def history() -> tuple[list[Event], str]:
    """create, edit, purge of one fact, and the fact's id."""
    made = fact("My bank PIN is 4426")
    edited = changes.edit(
        made, "My bank PIN is 9999", now=NOW, vector=None, embedding_model="m", actor="user"
    )
    purged = changes.purge(edited.fact, now=NOW, actor="user", reason="private")
    return chained(changes.create(made, None, "api"), edited, purged), made.id


def erased(event: Event) -> Event:
    """An event as a purge leaves it: no text, no salt, marked redacted."""
    return replace(
        event, before=audit.redact(event.before), after=audit.redact(event.after), salt=None, redacted=True
    )


def test_a_sealed_chain_verifies():
    events, _ = history()
    assert audit.verify(events) == AuditReport(ok=True, events=3, problems=[])
    assert audit.verify([]) == AuditReport(ok=True, events=0, problems=[])


def test_seal_chains_after_prev_over_a_salted_digest():
    change = changes.create(fact(), None, "api", "asked to")
    event = audit.seal(change, "u", NOW, "a" * 64)
    assert (event.seq, event.at, event.user_id, event.fact_id, event.action, event.actor, event.reason) == (
        0,
        NOW,
        "u",
        change.fact.id,
        Action.CREATE,
        "api",
        "asked to",
    )
    assert event.before is None and event.after == change.fact.snapshot()
    assert len(event.salt) == 32 and int(event.salt, 16) >= 0
    assert event.prev_hash == "a" * 64
    assert event.hash == hashlib.sha256(f"{'a' * 64}:{event.digest}".encode()).hexdigest()
    again = audit.seal(change, "u", NOW, "a" * 64)
    assert again.salt != event.salt and again.digest != event.digest  # the salt makes each digest unguessable


def test_sealing_a_purge_erases_the_text_of_its_before():
    made = fact("My bank PIN is 4426")
    event = audit.seal(changes.purge(made, now=NOW, actor="user"), "u", NOW, audit.GENESIS)
    assert event.before == {**made.snapshot(), "text": None, "purged": True}
    assert event.after["text"] == "" and event.after["purged"] is True


def test_content_digest_is_sha256_of_the_canonical_json():
    body = {"at": NOW, "user_id": "u", "fact_id": "f", "action": Action.EDIT, "actor": "user", "reason": "é"}
    kept = audit.content_digest(**body, before={"b": 1, "a": 2}, after=None, salt="s")
    canonical = (
        '{"action":"edit","actor":"user","after":null,"at":"2026-03-01T12:00:00+00:00","before":{"a":2,"b":1},'
        '"fact_id":"f","reason":"é","salt":"s","user_id":"u"}'
    )
    assert kept == hashlib.sha256(canonical.encode()).hexdigest()
    assert kept == audit.content_digest(**body, before={"a": 2, "b": 1}, after=None, salt="s")  # key order
    assert kept != audit.content_digest(**body, before={"a": 2, "b": 1}, after=None, salt="t")
    unsalted = canonical.replace(',"salt":"s"', "")  # events from before salts cover the content alone
    assert audit.content_digest(**body, before={"a": 2, "b": 1}, after=None, salt=None) == (
        hashlib.sha256(unsalted.encode()).hexdigest()
    )


def test_chain_hash_hashes_the_previous_hash_and_the_digest():
    assert audit.chain_hash(audit.GENESIS, "d") == hashlib.sha256(f"{'0' * 64}:d".encode()).hexdigest()
    assert audit.chain_hash("x", "d") != audit.chain_hash("y", "d")


def test_an_altered_event_is_found_by_its_digest():
    events, _ = history()
    events[1] = replace(events[1], reason="nothing to see")
    assert audit.verify(events).problems == ["event 2: content does not match its digest (altered)"]
    events, _ = history()
    events[0] = replace(events[0], after={**events[0].after, "text": "My bank PIN is 0000"})
    assert audit.verify(events) == AuditReport(
        ok=False, events=3, problems=["event 1: content does not match its digest (altered)"]
    )


def test_a_changed_hash_or_a_missing_event_breaks_the_chain():
    events, _ = history()
    events[0] = replace(events[0], hash="f" * 64)
    assert audit.verify(events).problems == [
        "event 1: hash does not match its digest",
        "event 2: prev_hash does not match the event before it",
    ]
    events, _ = history()
    assert audit.verify([events[0], events[2]]).problems == [
        "event 3: prev_hash does not match the event before it"
    ]


def test_events_redacted_by_a_recorded_purge_still_verify():
    events, _ = history()
    events[:2] = [erased(e) for e in events[:2]]
    assert audit.verify(events).ok


def test_a_redaction_must_be_complete_and_backed_by_a_purge():
    events, fact_id = history()
    assert audit.verify([erased(events[0]), events[1]]).problems == [
        f"event 1: redacted, but no purge of fact {fact_id} is recorded"
    ]
    with_text = replace(erased(events[0]), after={**events[0].after, "text": "My bank PIN is 4426"})
    assert audit.verify([with_text, *events[1:]]).problems == ["event 1: redacted, but still holds text"]
    with_salt = replace(erased(events[0]), salt="00" * 16)
    assert audit.verify([with_salt, *events[1:]]).problems == ["event 1: redacted, but still holds its salt"]


def test_a_reason_erased_for_a_purged_fact_verifies_only_with_that_purge():
    made, other = fact("My bank PIN is 4426"), fact("I like tea")
    events = chained(
        changes.create(made, None, "api"),
        changes.create(other, None, "api", "not the PIN 4426"),
        changes.purge(made, now=NOW, actor="user"),
    )
    reason_gone = replace(events[1], reason=None, salt=None, redacted_for=made.id)
    assert audit.verify([events[0], reason_gone, events[2]]).ok
    assert audit.verify([events[0], replace(reason_gone, redacted_for=other.id), events[2]]).problems == [
        f"event 2: its reason was erased, but no purge of {other.id}"
    ]
    assert audit.verify([events[0], replace(reason_gone, reason="not the PIN 4426"), events[2]]).problems == [
        "event 2: its reason was erased, but it still holds it or its salt"
    ]
    assert audit.verify([events[0], replace(reason_gone, salt=events[1].salt), events[2]]).problems == [
        "event 2: its reason was erased, but it still holds it or its salt"
    ]


def test_resealed_chains_again_and_replaces_the_digests_asked_for():
    out = audit.resealed([(4, "d4", False), (5, "d5", True), (6, "d6", False)], "p" * 64)
    (s4, d4, p4, h4), (s5, d5, p5, h5), (s6, d6, p6, h6) = out
    assert (s4, d4, p4, h4) == (4, "d4", "p" * 64, audit.chain_hash("p" * 64, "d4"))
    assert s5 == 5 and d5 != "d5" and len(d5) == 64 and int(d5, 16) >= 0
    assert (p5, h5) == (h4, audit.chain_hash(h4, d5))
    assert (s6, d6, p6, h6) == (6, "d6", h5, audit.chain_hash(h5, "d6"))
    assert audit.resealed([], "p") == []


def test_redact_erases_the_text_of_a_copy():
    snapshot = {"id": "f", "text": "secret", "purged": False}
    assert audit.redact(snapshot) == {"id": "f", "text": None, "purged": True}
    assert snapshot["text"] == "secret"
    assert audit.redact(None) is None


def test_texts_of_collects_every_text_a_fact_had():
    pairs = [
        (None, {"text": "a"}),
        ({"text": "a"}, {"text": "b"}),
        ({"text": None}, {"text": ""}),
        (None, None),
    ]
    assert audit.texts_of(pairs) == {"a", "b"}


@pytest.mark.parametrize(
    ("reason", "told"),
    [
        ("user said: MY BANK  PIN is 4426!", True),  # quoted, case and spacing aside
        ("the code was ４４２６", True),  # a number of three digits or more, width aside
        ("the pin ends in 26", False),  # a number of two digits is not enough
        ("the account ab7 is closed", True),  # a code with a digit
        ("about the bank account", False),  # one shared word of four letters
        ("moved the savings account", True),  # two words of four letters or more
        ("the bank holds it", False),  # "bank" and "holds", but from two texts
    ],
)
def test_tells_of_errs_towards_a_reason_speaking_of_the_text(reason, told):
    texts = ["My bank PIN is 4426", "Account ab7 holds my savings", "I live at number 26"]
    assert audit.tells_of(reason, texts) is told


def test_tells_of_needs_two_long_words_in_common_with_one_text():
    assert audit.tells_of("moved: my sister no longer lives there", ["My sister lives in Porto"])
    assert not audit.tells_of("my sister called", ["My sister lives in Porto"])
    assert not audit.tells_of("sister lives", ["My sister", "She lives in Porto"])  # not with one text
    assert not audit.tells_of("anything at all", [])


def test_believed_at_replays_the_log_up_to_a_time():
    made = fact("I live in Lisbon")
    edited = changes.edit(made, "I live in Porto", now=NOW, vector=None, embedding_model="m", actor="user")
    retracted = changes.retract(edited.fact, now=NOW, actor="user")
    events = chained(changes.create(made, None, "api"), edited, retracted)  # at +1, +2 and +3 minutes
    assert audit.believed_at("u", events, NOW) == {}
    assert (
        audit.believed_at("u", events, NOW + timedelta(minutes=1, seconds=30))[made.id].text
        == "I live in Lisbon"
    )
    at_edit = audit.believed_at("u", events, NOW + timedelta(minutes=2))[
        made.id
    ]  # an event's own time counts
    assert (at_edit.text, at_edit.version, at_edit.status) == ("I live in Porto", 2, Status.ACTIVE)
    assert audit.believed_at("u", events, NOW + timedelta(days=1))[made.id].status == Status.RETRACTED


def test_event_row_is_what_the_store_writes():
    event = chained(changes.create(fact("J'habite à Lyon"), None, "api"))[0]
    row = audit.event_row(event)
    assert row[:6] == ("2026-03-01T12:01:00+00:00", "u", event.fact_id, "create", "api", None)
    assert row[6] is None and json.loads(row[7]) == event.after and "à Lyon" in row[7]
    assert row[8:] == (event.digest, audit.GENESIS, event.hash, event.salt)
