"""Correcting memory when a person's life changes: mnemo's writer next to the Khoj policy.

    .venv/bin/python bench/correction.py [--quick] [--json] [--related-k K ...] [--upper-bound]

People. Each synthetic user has one stale fact per topic (22 topics: where
they live, their job, who they date, favourite food, car, sport, morning
drink, language, instrument, hobby, doctor, team, medication, address, music,
studies, pet, waking time, favourite author, favourite colour, summer trip,
gym), e.g. "I live in Lisbon", seeded as an active fact among 10,000
(`--quick`: 2,000) other facts of theirs. Later, one turn per topic, the user
states the change in their own words ("I moved to Porto last month, so that's
home now"); turns of all users are interleaved, one hour apart. The new
statement does not always repeat the old value: "I moved to Porto" says
nothing of Lisbon, "I sold my Fiat Panda and drive a Kia Niro now" does.

Filler. The other facts are synthetic first-person sentences (bench/facts.py:
relatives, trips, allergies, other people's jobs and cities, foods, dates…).
Templates that would state one of the changing attributes of the user
themselves ("I work as a … at …", "I drive a …", "I support …", 16 of the 40)
are left out of the filler: a user with 250 current jobs has no single stale
job to correct. What is left is close in vocabulary and meaning (a sister who
works as a nurse in Lisbon, a trip to Porto), which is the honest difficulty.

Vectors. The stale facts, the users' messages and everything the writer
embeds are embedded for real (the local all-MiniLM-L6-v2), so the similarity
between a stale fact and the statement that contradicts it is the model's.
The filler gets pool vectors plus noise as in bench/recall.py (one real
sentence per template, first filler and variant of the second; Gaussian
noise, sigma 0.02, renormalised), since embedding 50k sentences on two cores
would take minutes.

The model is scripted (tests/fakes/openai_server.py, a real OpenAI-compatible
server on loopback, reached by mnemo's OpenAIChatModel): the extractor returns
the user's new statement as one fact, with a topic question (EXTRACTED_TOPIC,
worded unlike the recall question: "Which city is my home?") and the generic
form of the fact it replaces (EXTRACTED_REPLACES). That form is made by one
rule from the topic question alone: the question answered in the first
person, its value "some <the question's noun>", "someone", "something" or
"somewhere" ("My home is some city", "My partner is someone"). So the
extractor knows the new statement and its topic question; it never sees the
stale fact, its wording or the recall question. The reconciler answers
"supersede" with the stale fact as target when the stale fact is among the
existing facts it was shown, "add" otherwise. The model is thus perfect, and
what is measured is whether each method puts the stale fact in front of it.

Methods, same seed contents (the seeded SQLite file is copied before the
turns), same vectors:
- mnemo: `Memory.remember` on the turn: the real writer (extract, embed, look
  for related facts in the whole scoped store: hash, nearest vectors to the
  statement, to its topic question and to its generic form above their floors,
  lexical; reconcile; rule; commit). Superseded = the stale fact's status is
  "superseded" afterwards.
- mnemo, no generic form: the same, with an extractor that gives only the topic.
- mnemo, no topic question nor generic form: an extractor that gives neither.
- khoj: Khoj's corrector sees only what recall returned for the turn (its 10
  most recent facts of the last 7 days and the 10 nearest to the user's
  message, bench/khoj_baseline.py) and updates by delete + insert; the same
  scripted rule decides. Superseded = the stale fact was deleted.

After all turns, one question per changed topic ("Where do I live?") is asked
of each method: mnemo `Memory.recall` (as shipped, at most 20 facts and a
1,000-token budget; "top 10" is its first 10), Khoj its policy ("top 10" is
its 10 nearest, "all" the union with the 10 recent, up to 20). The table
counts stale facts still returned, and how often the new fact is returned.
The target is at least 99% superseded for mnemo at 10k facts per user.

Diagnostics: before any turn, where each stale fact ranks among its user's
facts by cosine to the new statement, the extracted topic question and the
generic form (what the writer searches with: 5 nearest of each, at cosine >=
related_floor, topic_floor and replaces_floor, WriteSettings); for floors
0.25 to 0.6, the share of stale facts the topic and generic-form searches
would find and how many other facts they would show with them (how the
floors were chosen); misses are listed with those ranks and with what each
corrector was shown. `--related-k 10 20` adds mnemo rows with a larger
related_k (each from its own copy of the seeded store). `--upper-bound` adds
a row whose extractor words the generic form like the stale fact ("I live in
some city", OLD_WORDING): it knows what an honest extractor cannot, and shows
what the writer does when the form is apt. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.facts import TEMPLATES, VOCAB, SynthFact, make_facts, pool_sentences
from bench.khoj_baseline import KhojBaseline
from bench.recall import NOISE, import_changes, machine, make_console
from bench.replay import EMBEDDERS, local_embedder
from bench.scripted_model import asked, first_said, shown
from mnemo.domain import Scope, Source, SourceKind, Status, Turn
from mnemo.memory import Memory
from mnemo.providers.chat import OpenAIChatModel
from mnemo.settings import Settings
from mnemo.store.sqlite import SQLiteStore
from mnemo.write import changes
from tests.fakes.openai_server import ScriptedOpenAI

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
AIDS = ("topic", "replaces")  # what the scripted extractor gives with a fact, besides its text
SPREAD = timedelta(days=60)
SEED_BATCH = 5000

# (topic, stale template, new template, question). `{x}` is the old value, `{x2}` the new one.
TOPICS: list[tuple[str, str, str, str]] = [
    ("home", "I live in {city}", "I moved to {city2} last month, so that's home now", "Where do I live?"),
    (
        "job",
        "I work as a {job} at {employer}",
        "I started a new job as a {job2} at {employer2}",
        "What is my job?",
    ),
    ("partner", "I'm dating {name}", "{name} and I broke up; I'm seeing {name2} now", "Who am I dating?"),
    (
        "food",
        "My favourite food is {dish}",
        "I've gone off {dish}, these days I'd pick {dish2} over anything",
        "What is my favourite food?",
    ),
    ("car", "I drive a {car}", "I sold my {car} and drive a {car2} now", "What car do I drive?"),
    ("sport", "I play {sport} every week", "I gave up {sport} and took up {sport2}", "What sport do I play?"),
    (
        "drink",
        "I have {drink} every morning",
        "I switched to {drink2} in the mornings",
        "What do I drink in the morning?",
    ),
    (
        "language",
        "I'm learning {language}",
        "I stopped my {language} lessons and started {language2}",
        "Which language am I learning?",
    ),
    (
        "instrument",
        "I'm learning to play the {instrument}",
        "I now take {instrument2} lessons instead",
        "What instrument am I learning?",
    ),
    (
        "hobby",
        "My main hobby is {hobby}",
        "I spend most of my free time on {hobby2} now",
        "What is my hobby?",
    ),
    ("doctor", "My GP is Dr {surname}", "I registered with a new GP, Dr {surname2}", "Who is my GP?"),
    ("team", "I support {team}", "I've switched allegiance to {team2}", "Which team do I support?"),
    (
        "medication",
        "I take {medication} every day",
        "My doctor took me off {medication} and put me on {medication2}",
        "What medication do I take?",
    ),
    ("address", "My address is {num} {street}", "My new address is {num2} {street2}", "What is my address?"),
    (
        "music",
        "I mostly listen to {genre}",
        "Lately I've been listening to {genre2} more than anything",
        "What music do I listen to?",
    ),
    (
        "studies",
        "I'm studying {subject} at {school}",
        "I transferred to {school2} to study {subject2}",
        "What do I study?",
    ),
    (
        "pet",
        "I have a {pet} called {petname}",
        "We rehomed {petname}; now we have a {pet2} named {petname2}",
        "What pet do I have?",
    ),
    ("wake", "I get up at {hour} every day", "I've been getting up at {hour2} recently", "When do I get up?"),
    (
        "author",
        "My favourite author is {author}",
        "{author2} has become my favourite writer",
        "Who is my favourite author?",
    ),
    (
        "colour",
        "My favourite colour is {colour}",
        "My favourite colour is {colour2} these days",
        "What is my favourite colour?",
    ),
    (
        "trip",
        "I'm going to {country} this summer",
        "We cancelled {country}; this summer we're going to {country2}",
        "Where am I going this summer?",
    ),
    (
        "gym",
        "I go to the gym on {weekday}s",
        "I moved my gym sessions to {weekday2}s",
        "When do I go to the gym?",
    ),
]

# The topic question the scripted extractor gives with each new statement (the
# writer also searches by it). Worded unlike the recall question above, so the
# recall count does not profit from the extractor having seen the question.
EXTRACTED_TOPIC = {
    "home": "Which city is my home?",
    "job": "What do I do for a living?",
    "partner": "Who is my partner?",
    "food": "What food do I like best?",
    "car": "What car do I have?",
    "sport": "Which sport do I do?",
    "drink": "What is my morning drink?",
    "language": "What language am I studying?",
    "instrument": "Which instrument do I play?",
    "hobby": "What do I do in my free time?",
    "doctor": "Who is my doctor?",
    "team": "Which team am I a fan of?",
    "medication": "Which medicine am I on?",
    "address": "What is my street address?",
    "music": "What kind of music do I like?",
    "studies": "What and where do I study?",
    "pet": "What pet do we have?",
    "wake": "What time do I wake up?",
    "author": "Which writer do I like best?",
    "colour": "Which colour do I like best?",
    "trip": "Where am I travelling this summer?",
    "gym": "Which day do I go to the gym?",
}

# The generic form the scripted extractor gives with each new statement: how an older fact
# on its subject would read, the value left open (the writer also searches by it). Made by
# one rule from the extracted topic question above alone: that question answered in the
# first person, the value being "some <the question's noun>", or someone, something, somewhere
# ("Which city is my home?" -> "My home is some city", "Who is my partner?" -> "My partner is
# someone"). Never from the stale template, the new value or the recall question.
EXTRACTED_REPLACES = {
    "home": "My home is some city",
    "job": "For a living I do some job",
    "partner": "My partner is someone",
    "food": "The food I like best is some food",
    "car": "I have some car",
    "sport": "I do some sport",
    "drink": "My morning drink is some drink",
    "language": "I am studying some language",
    "instrument": "I play some instrument",
    "hobby": "In my free time I do something",
    "doctor": "My doctor is someone",
    "team": "I am a fan of some team",
    "medication": "I am on some medicine",
    "address": "My street address is some street address",
    "music": "I like some kind of music",
    "studies": "I study something somewhere",
    "pet": "We have some pet",
    "wake": "I wake up at some time",
    "author": "The writer I like best is some writer",
    "colour": "The colour I like best is some colour",
    "trip": "This summer I am travelling somewhere",
    "gym": "I go to the gym on some day",
}

# Only for the --upper-bound row: the generic form worded like the stale fact ("I live in some
# city"), which an honest extractor cannot know; what the writer does when the form is apt.
OLD_WORDING = {t: re.sub(r"(?:\b(?:an?|the) )?{(\w+)}", r"some \1", stale) for t, stale, _, _ in TOPICS}

# facts.py templates that would state a changing attribute of the user themselves
EXCLUDED = (
    "I work as",
    "I've worked as",
    "I've lived at",
    "My favourite dish",
    "I drive",
    "I have a {pet}",
    "I adopted my",
    "My doctor",
    "I support",
    "I drink",
    "I usually wake",
    "I have {condition}",
    "I speak",
    "I play",
    "I started learning",
    "I've been into",
)
KEEP = {i for i, t in enumerate(TEMPLATES) if not t.startswith(EXCLUDED)}


def clock_at(box: list[datetime]):
    return lambda: box[0]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Plan:
    users: int
    per_user: int
    variants: int
    seed: int

    @classmethod
    def make(cls, quick: bool, seed: int) -> Plan:
        return cls(2, 2_000, 1, seed) if quick else cls(5, 10_000, 4, seed)


@dataclass
class ChangeCase:
    user: int
    topic: str
    stale: str
    new: str
    question: str
    stale_id: str = ""
    said_at: datetime = NOW
    shown: dict[str, list[str]] = field(default_factory=dict)  # per method: what its corrector saw
    # before the turns: the stale fact's rank and cosine among the user's facts, by the new
    # statement's vector and by the extracted topic question's
    rank_new: int = 0
    cos_new: float = 0.0
    rank_topic: int = 0
    cos_topic: float = 0.0
    rank_generic: int = 0  # by the extracted generic form's
    cos_generic: float = 0.0


def _value(slot: str, rng: random.Random, avoid: str | None = None) -> str:
    choices = [v for v in VOCAB[slot] if v != avoid]
    return rng.choice(choices)


def _articles(text: str) -> str:
    return re.sub(r"\ba (?=[aeiou])", "an ", text)


def make_cases(rng: random.Random, users: int) -> list[ChangeCase]:
    """One change per topic per user; no two users share a stale or a new statement (the
    scripted model recognises a change by its text)."""
    out, used = [], set()
    for u in range(users):
        for topic, stale, new, question in TOPICS:
            while True:
                values: dict[str, str] = {}
                for slot in re.findall(r"{(\w+?)}", stale + new):
                    base = slot.rstrip("2")
                    if slot.endswith("2"):
                        values[slot] = _value(base, rng, values.get(base))
                    else:
                        values.setdefault(slot, _value(slot, rng))
                old_text, new_text = stale.format(**values), new.format(**values)
                if old_text not in used and new_text not in used:
                    break
            used |= {old_text, new_text}
            out.append(ChangeCase(u, topic, _articles(old_text), _articles(new_text), question))
    return out


def filler(rng: random.Random, n: int, taken: set[str], variants: int) -> list[SynthFact]:
    out: list[SynthFact] = []
    while len(out) < n:
        out += [f for f in make_facts(rng, n, taken, variants) if f.key[0] in KEEP]
    return out[:n]


class Script:
    """The scripted model: extracts the user's statement, supersedes the stale fact when shown."""

    def __init__(self, cases: list[ChangeCase]) -> None:
        self.by_new = {c.new: c for c in cases}
        self.lock = threading.Lock()
        self.label = "mnemo"  # the method whose turns are being written
        self.aids = AIDS  # the search aids the extractor gives with each fact

    def __call__(self, body: dict) -> str | None:
        kind, user = asked(body)
        if kind == "extract":
            said = first_said(user)
            facts = []
            if said in self.by_new:
                case = self.by_new[said]
                fact = {"text": case.new, "confidence": 0.95, "speaker": "user", "message": 1}
                if "topic" in self.aids:
                    fact["topic"] = EXTRACTED_TOPIC[case.topic]
                if "replaces" in self.aids:
                    fact["replaces"] = EXTRACTED_REPLACES[case.topic]
                elif "old wording" in self.aids:  # the upper bound: knows how the stale fact reads
                    fact["replaces"] = OLD_WORDING[case.topic]
                facts.append(fact)
            return json.dumps({"facts": facts})
        if kind == "reconcile":
            existing, new = shown(user)
            decisions = []
            for number, text in new:
                case = self.by_new.get(text)
                with self.lock:
                    if case is not None:
                        case.shown[self.label] = list(existing)
                target = existing.get(case.stale) if case else None
                action = "supersede" if target is not None else "add"
                decisions.append({"new": number, "action": action, "target": target})
            return json.dumps({"decisions": decisions})
        return None


async def seed(
    path: Path, plan: Plan, cases: list[ChangeCase], embedder, rng: random.Random
) -> tuple[list[str], dict]:
    """One SQLite file: per user the filler plus the stale facts, at random times over SPREAD.
    Returns the user ids and, per user, the seeded vectors (for the diagnostics)."""
    import numpy as np

    pool = {k: s for k, s in pool_sentences(rng, plan.variants).items() if k[0] in KEEP}
    t = time.perf_counter()
    pool_vec = dict(zip(pool, embedder.embed_sync(list(pool.values())), strict=True))
    log(f"embedded a pool of {len(pool)} sentences in {time.perf_counter() - t:.1f}s")
    stale_vec = embedder.embed_sync([c.stale for c in cases])
    noise = np.random.default_rng(rng.randrange(2**32))
    store = SQLiteStore(path, clock=lambda: NOW)
    await store.open()
    user_ids, taken, seeded = [], {c.stale for c in cases} | {c.new for c in cases}, {}
    for u in range(plan.users):
        user = await store.ensure_user(f"person-{u}")
        user_ids.append(user.id)
        scope = Scope(user.id)
        facts = filler(rng, plan.per_user, taken, plan.variants)
        base = np.stack([pool_vec[f.key] for f in facts])
        noisy = base + noise.normal(0.0, NOISE, base.shape).astype(np.float32)
        vecs = list((noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32))
        texts = [f.text for f in facts]
        mine = [i for i, c in enumerate(cases) if c.user == u]
        texts += [cases[i].stale for i in mine]
        vecs += [stale_vec[i] for i in mine]
        times = [NOW - SPREAD * rng.random() for _ in texts]
        batch = import_changes(scope, texts, vecs, times, embedder.model_name)
        for k, i in enumerate(mine):
            cases[i].stale_id = batch[plan.per_user + k].fact.id
        seeded[u] = (np.stack(vecs), {cases[i].stale_id: plan.per_user + k for k, i in enumerate(mine)})
        for start in range(0, len(batch), SEED_BATCH):
            await store.commit(user.id, batch[start : start + SEED_BATCH], NOW)
    await store.close()
    return user_ids, seeded


# the floors swept, per model (e5's cosines sit higher than MiniLM's); MiniLM's for any other
FLOORS = {
    "all-MiniLM-L6-v2-int8": (0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6),
    "multilingual-e5-small-q4": (0.74, 0.76, 0.78, 0.8, 0.82, 0.84, 0.86, 0.88),
}


def diagnose(seeded: dict, cases: list[ChangeCase], embedder) -> dict:
    """Where each stale fact ranks among its user's seeded facts (before any turn) by cosine to
    what the writer searches with: the new statement, the extracted topic question and the
    extracted generic form. And, per floor a cue's search could have, the share of stale facts
    it would find (among the 5 nearest, at or above the floor) and how many other facts it
    would show the reconciler with them (the 5 nearest at or above the floor, less the stale)."""
    import numpy as np

    w = Settings().for_model(embedder.model_name).write
    floors = {"new": w.related_floor, "topic": w.topic_floor, "generic": w.replaces_floor}
    cues = {
        "new": embedder.embed_sync([c.new for c in cases]),
        "topic": embedder.embed_sync([EXTRACTED_TOPIC[c.topic] for c in cases], queries=True),
        "generic": embedder.embed_sync([EXTRACTED_REPLACES[c.topic] for c in cases], queries=True),
    }
    found: dict[str, list[bool]] = {cue: [] for cue in cues}
    swept = FLOORS.get(embedder.model_name, FLOORS["all-MiniLM-L6-v2-int8"])
    sweep = {cue: {f: [0, 0] for f in swept} for cue in ("topic", "generic")}  # found, others shown
    for i, c in enumerate(cases):
        matrix, row_of = seeded[c.user]
        at = row_of[c.stale_id]
        for cue, vectors in cues.items():
            scores = matrix @ vectors[i]
            rank, cos = int((scores > scores[at]).sum()) + 1, float(scores[at])
            setattr(c, f"rank_{cue}", rank)
            setattr(c, f"cos_{cue}", cos)
            found[cue].append(rank <= 5 and cos >= floors[cue])
            if cue in sweep:
                top = np.argsort(-scores)[:5]
                for f in swept:
                    sweep[cue][f][0] += rank <= 5 and cos >= f
                    sweep[cue][f][1] += sum(1 for j in top if j != at and scores[j] >= f)
    n = len(cases)
    out: dict = {f"by_{cue}_top5": sum(getattr(c, f"rank_{cue}") <= 5 for c in cases) / n for cue in cues}
    out |= {f"by_{cue}_top5_above_floor": sum(hits) / n for cue, hits in found.items()}
    out |= {f"median_rank_{cue}": sorted(getattr(c, f"rank_{cue}") for c in cases)[n // 2] for cue in cues}
    out["new_or_topic"] = sum(a or b for a, b in zip(found["new"], found["topic"], strict=True)) / n
    out["any"] = sum(any(hits) for hits in zip(*found.values(), strict=True)) / n
    out["floor_sweep"] = {
        cue: {str(f): {"found": v[0] / n, "others_shown": v[1] / n} for f, v in by.items()}
        for cue, by in sweep.items()
    }
    return out


async def run_mnemo(
    path: Path,
    users: list[str],
    cases: list[ChangeCase],
    embedder,
    server,
    label: str,
    related_k: int | None = None,
    aids: tuple[str, ...] = AIDS,
) -> dict:
    box = [NOW]
    store = SQLiteStore(path, clock=clock_at(box))
    chat = OpenAIChatModel(server.base_url, None, "scripted-model", max_retries=0)
    settings = Settings().for_model(embedder.model_name)
    if related_k is not None:
        settings.write.related_k = related_k
    server.responder.label = label
    server.responder.aids = aids
    memory = await Memory(store, embedder, chat, settings=settings, clock=clock_at(box)).open()
    t = time.perf_counter()
    problems = []
    for c in cases:
        box[0] = c.said_at
        turn = Turn.of(Scope(users[c.user]), ("user", c.new), ("assistant", "Noted, thanks."), at=c.said_at)
        report = await memory.remember(turn)
        problems += report.problems
    turns_s = time.perf_counter() - t
    superseded = []
    for c in cases:
        fact = await memory.get(Scope(users[c.user]), c.stale_id)
        superseded.append(fact.status == Status.SUPERSEDED)
    box[0] = cases[-1].said_at + timedelta(days=1)
    asked = []
    t = time.perf_counter()
    for c in cases:
        hits = await memory.recall(c.question, Scope(users[c.user]), limit=20)
        texts = [h.fact.text for h in hits]
        asked.append((texts[:10], texts))
    recall_s = time.perf_counter() - t
    await memory.close()
    return {
        "superseded": superseded,
        "asked": asked,
        "turns_s": turns_s,
        "recall_s": recall_s,
        "problems": problems,
    }


async def run_khoj(path: Path, users: list[str], cases: list[ChangeCase], embedder) -> dict:
    store = SQLiteStore(path, clock=lambda: NOW)
    await store.open()
    base = KhojBaseline(store._conn, embedder.model_name)
    model = embedder.model_name
    superseded = []
    t = time.perf_counter()
    msg_vec = embedder.embed_sync([c.new for c in cases])  # the message is the new statement
    for c, v in zip(cases, msg_vec, strict=True):
        uid, scope = users[c.user], Scope(users[c.user])
        shown = base.recall(uid, v, c.said_at)
        c.shown["khoj"] = [text for _, text in shown]
        new = changes.new_fact(
            scope, c.new, now=c.said_at, source=Source(SourceKind.USER_MESSAGE), embedding_model=model
        )
        batch = [changes.create(new, v, "khoj")]
        hit = any(fid == c.stale_id for fid, _ in shown)
        if hit:  # delete + insert
            stale = await store.get_fact(scope, c.stale_id)
            batch.insert(0, changes.retract(stale, now=c.said_at, actor="khoj"))
        await store.commit(uid, batch, c.said_at)
        superseded.append(hit)
    turns_s = time.perf_counter() - t
    end = cases[-1].said_at + timedelta(days=1)
    qvec = embedder.embed_sync([c.question for c in cases], queries=True)
    asked = []
    t = time.perf_counter()
    for c, v in zip(cases, qvec, strict=True):
        nearest = [text for _, text in base.nearest(users[c.user], v)]
        union = [text for _, text in base.recall(users[c.user], v, end)]
        asked.append((nearest, union))
    recall_s = time.perf_counter() - t
    await store.close()
    return {
        "superseded": superseded,
        "asked": asked,
        "turns_s": turns_s,
        "recall_s": recall_s,
        "problems": [],
    }


def score(name: str, r: dict, cases: list[ChangeCase]) -> dict:
    n = len(cases)
    top10 = sum(c.stale in a[0] for c, a in zip(cases, r["asked"], strict=True))
    every = sum(c.stale in a[1] for c, a in zip(cases, r["asked"], strict=True))
    new10 = sum(c.new in a[0] for c, a in zip(cases, r["asked"], strict=True))
    new_all = sum(c.new in a[1] for c, a in zip(cases, r["asked"], strict=True))
    return {
        "method": name,
        "changes": n,
        "superseded": sum(r["superseded"]),
        "superseded_share": sum(r["superseded"]) / n,
        "stale_in_top10": top10,
        "stale_in_all": every,
        "new_in_top10": new10,
        "new_in_all": new_all,
        "mean_returned": sum(len(a[1]) for a in r["asked"]) / n,
        "turns_s": r["turns_s"],
        "recall_s": r["recall_s"],
    }


def misses(name: str, r: dict, cases: list[ChangeCase]) -> list[dict]:
    out = []
    for c, ok in zip(cases, r["superseded"], strict=True):
        if not ok:
            miss = {"user": c.user, "topic": c.topic, "stale": c.stale, "new": c.new}
            miss |= {
                "stale_rank": c.rank_new,
                "stale_cosine": round(c.cos_new, 3),
                "rank_by_topic": c.rank_topic,
                "topic_cosine": round(c.cos_topic, 3),
                "rank_by_generic": c.rank_generic,
                "generic_cosine": round(c.cos_generic, 3),
            }
            out.append(miss | {"shown": c.shown.get(name, [])[:8]})
    return out


def render(rows: list[dict], missed: dict, plan: Plan, info: dict, diag: dict) -> None:
    from rich.table import Table

    console = make_console()
    console.print(
        f"Machine: {info['cores']} cores ({info['cpu']}), Python {info['python']}, SQLite {info['sqlite']}"
    )
    table = Table(
        title=f"Correction: {plan.users} users x {plan.per_user:,} filler facts, "
        f"{len(TOPICS)} changes each; afterwards one question per changed topic"
    )
    cols = (
        "method",
        "changes",
        "superseded",
        "stale in top 10",
        "stale in all",
        "new in top 10",
        "new in all",
    )
    for col in (*cols, "mean returned", "turns s", "recall s"):
        table.add_column(col, justify="left" if col == "method" else "right")
    for r in rows:
        table.add_row(
            r["method"],
            str(r["changes"]),
            f"{r['superseded']} ({r['superseded_share']:.1%})",
            str(r["stale_in_top10"]),
            str(r["stale_in_all"]),
            str(r["new_in_top10"]),
            str(r["new_in_all"]),
            f"{r['mean_returned']:.1f}",
            f"{r['turns_s']:.1f}",
            f"{r['recall_s']:.1f}",
        )
    console.print(table)
    console.print(
        "top 10: mnemo's first 10 recalled facts; Khoj's 10 nearest. all: mnemo's whole recall "
        "(<= 20 facts, 1,000 tokens); Khoj's recent 10 + nearest 10."
    )
    console.print(
        "Before the turns, the stale fact is among the 5 nearest to the new statement for "
        f"{diag['by_new_top5']:.0%} of changes ({diag['by_new_top5_above_floor']:.0%} also above "
        f"related_floor), median rank {diag['median_rank_new']}; among the 5 nearest to the "
        f"extracted topic question for {diag['by_topic_top5']:.0%} "
        f"({diag['by_topic_top5_above_floor']:.0%} also above topic_floor), median rank "
        f"{diag['median_rank_topic']}; among the 5 nearest to the extracted generic form for "
        f"{diag['by_generic_top5']:.0%} ({diag['by_generic_top5_above_floor']:.0%} also above "
        f"replaces_floor), median rank {diag['median_rank_generic']}; found by the statement or "
        f"topic: {diag['new_or_topic']:.1%}, by any of the three: {diag['any']:.1%}."
    )
    for cue, by in diag["floor_sweep"].items():
        said = ", ".join(f"{f}: {v['found']:.1%} / {v['others_shown']:.1f}" for f, v in by.items())
        console.print(f"{cue} floor: stale found / other facts shown per change: {said}")
    for name, items in missed.items():
        console.print(f"{name}: {len(items)} stale fact(s) not superseded")
        for m in items[:5]:
            rank = (
                f" (before the turns the stale fact ranked {m['stale_rank']}, cosine {m['stale_cosine']:.2f},"
                f" by topic {m['rank_by_topic']}, cosine {m['topic_cosine']:.2f},"
                f" by generic form {m['rank_by_generic']}, cosine {m['generic_cosine']:.2f})"
            )
            console.print(f"  [{m['topic']}] {m['stale']!r} -> {m['new']!r}{rank}; shown: {m['shown'][:5]}")


async def main(args: argparse.Namespace) -> dict:
    plan = Plan.make(args.quick, args.seed)
    rng = random.Random(plan.seed)
    embedder = local_embedder(args.embedder)
    cases = make_cases(rng, plan.users)
    rng.shuffle(cases)
    for i, c in enumerate(cases):
        c.said_at = NOW + timedelta(hours=i + 1)
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as tmp, ScriptedOpenAI() as server:
        server.responder = Script(cases)
        a, b = Path(tmp) / "mnemo.db", Path(tmp) / "khoj.db"
        t = time.perf_counter()
        users, seeded = await seed(a, plan, cases, embedder, rng)
        shutil.copyfile(a, b)
        log(f"seeded {plan.users} x {plan.per_user + len(TOPICS)} facts in {time.perf_counter() - t:.1f}s")
        diag = diagnose(seeded, cases, embedder)
        runs = {}
        arms = [("mnemo", None, AIDS), ("mnemo, no generic form", None, ("topic",))]
        arms += [("mnemo, no topic question nor generic form", None, ())]
        arms += [(f"mnemo related_k={k}", k, AIDS) for k in args.related_k]
        if args.upper_bound:
            arms += [("mnemo, generic form from the stale wording", None, ("topic", "old wording"))]
        for n, (label, k, aids) in enumerate(arms):
            path = Path(tmp) / f"mnemo-{n}.db"
            shutil.copyfile(a, path)
            runs[label] = await run_mnemo(path, users, cases, embedder, server, label, k, aids)
            log(f"{label}: {len(cases)} turns in {runs[label]['turns_s']:.1f}s")
        runs["khoj"] = await run_khoj(b, users, cases, embedder)
        log(f"khoj: {len(cases)} turns in {runs['khoj']['turns_s']:.1f}s")
    rows = [score(name, r, cases) for name, r in runs.items()]
    missed = {name: misses(name, r, cases) for name, r in runs.items()}
    mnemo = runs["mnemo"]
    info = machine()
    render(rows, missed, plan, info, diag)
    return {
        "machine": info,
        "plan": plan.__dict__,
        "topics": len(TOPICS),
        "now": NOW.isoformat(),
        "rows": rows,
        "target_met": rows[0]["superseded_share"] >= 0.99,
        "before_turns": diag,
        "misses": missed,
        "writer_problems": mnemo["problems"][:20],
    }


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 users x 2,000 facts (CI smoke)")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="minilm", help="the local model")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--related-k",
        type=int,
        nargs="*",
        default=[],
        help="extra mnemo rows with WriteSettings.related_k set to each value (shipped: 5)",
    )
    parser.add_argument(
        "--upper-bound",
        action="store_true",
        help="an extra mnemo row whose extractor words the generic form like the stale fact "
        "(it knows the old wording: a bound, not a result)",
    )
    args = parser.parse_args()
    t = time.perf_counter()
    out = asyncio.run(main(args))
    out["wall_s"] = time.perf_counter() - t
    log(f"done in {out['wall_s']:.0f}s")
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    cli()
