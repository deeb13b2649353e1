"""write/changes.py: every way a fact can change, as the Change each function returns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mnemo.domain import Action, Category, Change, InvalidInput, Scope, Source, SourceKind, Status
from mnemo.write import changes
from tests.unit.helpers import NOW, fact

LATER = NOW + timedelta(days=2)
VECTOR = object()  # the writer's vector travels untouched


# clean_text


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("  I   live\tin\nLisbon  ", "I live in Lisbon"),
        ("I\x00live", "I live"),
        ("I like \x1b[2J\x1b]0;pwned\x07tea\x9b31m", "I like [2J ]0;pwned tea 31m"),  # no terminal escapes
        ("evil\u202etxt.exe\u2066x\u2069", "eviltxt.exex"),  # directional overrides and isolates go
        ("a\u200eb\u200fc\u061cd", "a\u200eb\u200fc\u061cd"),  # the marks LRM, RLM and ALM stay
        ("x" * 2000, "x" * 2000),
        ("x " * 1000, ("x " * 1000).strip()),  # 1999 characters once the spacing is collapsed
    ],
)
def test_clean_text_stores_one_spacing_without_controls_or_overrides(given, stored):
    assert changes.clean_text(given) == stored


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("I am \ud800 here", "a memory must be valid Unicode"),
        ("", "a memory needs some text"),
        (" \n\x00\t", "a memory needs some text"),
        ("\u202e\u202c", "a memory needs some text"),
        ("x" * 2001, "a memory is at most 2000 characters"),
    ],
)
def test_clean_text_refuses_what_cannot_be_a_memory(given, message):
    with pytest.raises(InvalidInput, match=message):
        changes.clean_text(given)


# new_fact


def test_a_new_fact_takes_its_scope_cleaned_text_and_times():
    source = Source(SourceKind.USER_MESSAGE, "c1", ("m1",), "user")
    made = changes.new_fact(
        Scope("u", "agent-1"),
        "  I play   the cello ",
        now=NOW,
        source=source,
        category=Category.PREFERENCE,
        confidence=0.6,
        embedding_model="minilm",
        pinned=True,
        supersedes="old-id",
    )
    assert (made.user_id, made.agent_id, made.text) == ("u", "agent-1", "I play the cello")
    assert (made.category, made.status, made.confidence, made.source) == (
        Category.PREFERENCE,
        Status.ACTIVE,
        0.6,
        source,
    )
    assert made.created_at == made.recorded_at == made.last_seen_at == NOW
    assert (made.version, made.mentions, made.valid_from, made.valid_to, made.retired_at) == (
        1,
        1,
        None,
        None,
        None,
    )
    assert (made.embedding_model, made.pinned, made.supersedes, made.purged) == (
        "minilm",
        True,
        "old-id",
        False,
    )


def test_a_candidate_is_not_recorded_until_approved():
    made = changes.new_fact(Scope("u"), "I play the cello", now=NOW, source=Source(), status=Status.CANDIDATE)
    assert made.recorded_at is None and made.created_at == made.last_seen_at == NOW


@pytest.mark.parametrize(("given", "kept"), [(1.7, 1.0), (-0.2, 0.0), (0.35, 0.35)])
def test_a_new_facts_confidence_is_held_between_0_and_1(given, kept):
    assert changes.new_fact(Scope("u"), "x", now=NOW, source=Source(), confidence=given).confidence == kept


def test_every_new_fact_gets_an_id_of_its_own():
    ids = {changes.new_fact(Scope("u"), "x", now=NOW, source=Source()).id for _ in range(50)}
    assert len(ids) == 50


# the lifecycle


def test_create_records_the_fact_and_its_vector():
    made = fact()
    change = changes.create(made, VECTOR, "api", "asked to")
    assert change == Change(made, Action.CREATE, "api", reason="asked to", vector=VECTOR)
    assert change.before is None and not change.redact


def test_edit_keeps_the_id_and_creation_and_bumps_the_version():
    old = fact(category=Category.IDENTITY, confidence=0.9)
    change = changes.edit(
        old,
        " I live in  Porto ",
        now=LATER,
        vector=VECTOR,
        embedding_model="m2",
        actor="user",
        reason="moved",
    )
    new = change.fact
    assert (change.action, change.actor, change.reason, change.before, change.vector) == (
        Action.EDIT,
        "user",
        "moved",
        old,
        VECTOR,
    )
    assert (new.id, new.created_at, new.recorded_at) == (old.id, NOW, NOW)
    assert (new.text, new.version, new.embedding_model, new.last_seen_at) == (
        "I live in Porto",
        2,
        "m2",
        LATER,
    )
    assert (new.category, new.confidence, new.status) == (Category.IDENTITY, 0.9, Status.ACTIVE)


def test_edit_sets_a_new_category_and_confidence_even_zero():
    old = fact(confidence=0.9)
    new = changes.edit(
        old,
        "x",
        now=LATER,
        vector=None,
        embedding_model="m",
        actor="a",
        category=Category.PLAN,
        confidence=0.0,
    ).fact
    assert (new.category, new.confidence) == (Category.PLAN, 0.0)


def test_a_candidate_can_be_edited():
    edited = changes.edit(
        fact(status=Status.CANDIDATE), "y", now=LATER, vector=None, embedding_model="m", actor="a"
    )
    assert (edited.fact.status, edited.fact.text, edited.fact.recorded_at) == (Status.CANDIDATE, "y", None)


def test_supersede_retires_the_old_fact_from_when_the_new_one_holds():
    old = fact()
    moved = fact("I live in Porto", valid_from=datetime(2026, 1, 15, tzinfo=UTC))
    change = changes.supersede(old, moved, now=LATER, actor="extractor", reason="moved")
    after = change.fact
    assert (change.action, change.before, change.reason) == (Action.SUPERSEDE, old, "moved")
    assert (after.status, after.superseded_by, after.version) == (Status.SUPERSEDED, moved.id, 2)
    assert (after.valid_to, after.retired_at) == (datetime(2026, 1, 15, tzinfo=UTC), LATER)
    assert after.text == old.text and after.id == old.id


def test_supersede_by_a_fact_without_a_date_ends_the_old_one_now():
    assert changes.supersede(fact(), fact("I live in Porto"), now=LATER, actor="a").fact.valid_to == LATER


def test_retract_ends_the_fact_now_unless_it_had_ended_already():
    change = changes.retract(fact(), now=LATER, actor="user", reason="not true")
    assert (change.action, change.reason) == (Action.RETRACT, "not true")
    assert (change.fact.status, change.fact.valid_to, change.fact.retired_at, change.fact.version) == (
        Status.RETRACTED,
        LATER,
        LATER,
        2,
    )
    ended = datetime(2026, 2, 1, tzinfo=UTC)
    assert changes.retract(fact(valid_to=ended), now=LATER, actor="a").fact.valid_to == ended


@pytest.mark.parametrize("status", [Status.RETRACTED, Status.SUPERSEDED, Status.REJECTED])
def test_restore_makes_a_retired_fact_active_again(status):
    retired = fact(
        status=status, valid_to=LATER, retired_at=LATER, superseded_by="other", recorded_at=None, version=3
    )
    later = LATER + timedelta(hours=1)
    change = changes.restore(retired, now=later, actor="user")
    restored = change.fact
    assert (change.action, change.before) == (Action.RESTORE, retired)
    assert (restored.status, restored.valid_to, restored.retired_at, restored.superseded_by) == (
        Status.ACTIVE,
        None,
        None,
        None,
    )
    assert (restored.recorded_at, restored.last_seen_at, restored.version) == (later, later, 4)


def test_approve_records_a_candidate_from_now():
    change = changes.approve(fact(status=Status.CANDIDATE), now=LATER, actor="user", reason="yes")
    assert (change.action, change.reason) == (Action.APPROVE, "yes")
    assert (change.fact.status, change.fact.recorded_at, change.fact.last_seen_at) == (
        Status.ACTIVE,
        LATER,
        LATER,
    )


def test_reject_retires_a_candidate():
    change = changes.reject(fact(status=Status.CANDIDATE), now=LATER, actor="user")
    assert change.action == Action.REJECT
    assert (change.fact.status, change.fact.retired_at, change.fact.recorded_at) == (
        Status.REJECTED,
        LATER,
        None,
    )


@pytest.mark.parametrize("status", [Status.ACTIVE, Status.CANDIDATE])
def test_reinforce_counts_the_mentions_and_refreshes(status):
    once = changes.reinforce(fact(status=status), now=LATER, actor="extractor").fact
    assert (once.mentions, once.last_seen_at, once.version, once.status) == (2, LATER, 2, status)
    thrice = changes.reinforce(fact(status=status, mentions=4), now=LATER, actor="import", mentions=3)
    assert (thrice.action, thrice.fact.mentions) == (Action.REINFORCE, 7)


def test_merge_closes_a_candidate_as_superseded_by_the_fact_it_repeats():
    candidate, into = fact(status=Status.CANDIDATE), fact()
    change = changes.merge(candidate, into, now=LATER, actor="user")
    assert (change.action, change.before) == (Action.APPROVE, candidate)
    assert change.reason == f"approved: memory {into.id} says the same and was reinforced"
    assert (change.fact.status, change.fact.superseded_by, change.fact.retired_at) == (
        Status.SUPERSEDED,
        into.id,
        LATER,
    )


def test_pin_and_unpin():
    pinned = changes.pin(fact(), True, actor="user")
    assert (pinned.action, pinned.fact.pinned, pinned.fact.version) == (Action.PIN, True, 2)
    unpinned = changes.pin(pinned.fact, False, actor="user")
    assert (unpinned.action, unpinned.fact.pinned, unpinned.fact.version) == (Action.UNPIN, False, 3)
    assert changes.pin(fact(status=Status.CANDIDATE), True, actor="user").fact.pinned


def test_pinning_twice_is_refused():
    made = fact(pinned=True)
    with pytest.raises(InvalidInput, match=f"memory {made.id} is pinned already"):
        changes.pin(made, True, actor="user")
    with pytest.raises(InvalidInput, match="is not pinned already"):
        changes.pin(fact(), False, actor="user")


@pytest.mark.parametrize(
    ("status", "after"),
    [
        (Status.ACTIVE, Status.RETRACTED),
        (Status.CANDIDATE, Status.REJECTED),
        (Status.SUPERSEDED, Status.SUPERSEDED),
        (Status.RETRACTED, Status.RETRACTED),
        (Status.REJECTED, Status.REJECTED),
    ],
)
def test_purge_erases_the_text_and_leaves_recall_and_review(status, after):
    made = fact("My bank PIN is 4426", status=status, pinned=True, embedding_model="m")
    change = changes.purge(made, now=LATER, actor="user", reason="private")
    gone = change.fact
    assert (change.action, change.before, change.redact, change.reason) == (
        Action.PURGE,
        made,
        True,
        "private",
    )
    assert (gone.text, gone.purged, gone.status, gone.pinned, gone.embedding_model) == (
        "",
        True,
        after,
        False,
        None,
    )
    assert (gone.retired_at, gone.version, gone.id) == (LATER, 2, made.id)


def test_purge_keeps_an_earlier_retirement():
    assert changes.purge(fact(retired_at=NOW), now=LATER, actor="user").fact.retired_at == NOW


def test_a_purged_fact_changes_no_more():
    purged = changes.purge(fact(), now=LATER, actor="user").fact
    with pytest.raises(InvalidInput, match=f"^memory {purged.id} was already purged$"):
        changes.purge(purged, now=LATER, actor="user")
    for attempt in (
        lambda: changes.restore(purged, now=LATER, actor="user"),
        lambda: changes.edit(purged, "x", now=LATER, vector=None, embedding_model="m", actor="user"),
    ):
        with pytest.raises(InvalidInput, match=f"^memory {purged.id} was purged$"):
            attempt()


@pytest.mark.parametrize(
    ("status", "change"),
    [
        (
            Status.RETRACTED,
            lambda f: changes.edit(f, "x", now=LATER, vector=None, embedding_model="m", actor="a"),
        ),
        (Status.CANDIDATE, lambda f: changes.supersede(f, fact(), now=LATER, actor="a")),
        (Status.RETRACTED, lambda f: changes.retract(f, now=LATER, actor="a")),
        (Status.ACTIVE, lambda f: changes.restore(f, now=LATER, actor="a")),
        (Status.CANDIDATE, lambda f: changes.restore(f, now=LATER, actor="a")),
        (Status.ACTIVE, lambda f: changes.approve(f, now=LATER, actor="a")),
        (Status.REJECTED, lambda f: changes.reject(f, now=LATER, actor="a")),
        (Status.SUPERSEDED, lambda f: changes.reinforce(f, now=LATER, actor="a")),
        (Status.ACTIVE, lambda f: changes.merge(f, fact(), now=LATER, actor="a")),
        (Status.RETRACTED, lambda f: changes.pin(f, True, actor="a")),
    ],
)
def test_a_change_from_the_wrong_status_is_refused_with_the_status(status, change):
    with pytest.raises(InvalidInput, match=rf"^cannot \w+ a memory that is {status}$"):
        change(fact(status=status))


def test_a_reason_holding_nul_is_stored_with_a_replacement_character():
    assert changes.retract(fact(), now=LATER, actor="a", reason="gone\x00now").reason == "gone\ufffdnow"
