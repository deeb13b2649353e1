"""Facts that end: the end read from what was said, and recall's rules once it has passed.

    .venv/bin/python bench/time_bound.py [--quick] [--embedder minilm|multilingual-e5] [--json]

Statements in six languages (English, German, French, Spanish, Portuguese, Italian), each
an explicit request ("Remember that I am in Lisbon this week"), said on dates spread over
a year: states with an end in their words ("this week", "this month", "until Friday",
"for the next three weeks", "until 20 March"), events ("I ran a marathon on Sunday") and
open-ended states ("I live in Lisbon"). Each language is one person's memory, every
statement learnt through the real write path without a chat model (the explicit-request
extractor and its end reader, write/ends.py) into a real SQLite store, with the clock at
the day it was said.

Three scores, kept apart because they measure different parts:
- resolution: of the states with an end, how many got exactly the end the words give
  (computed here independently of the reader); of the events and open-ended states, how
  many got an end they should not have (target 0);
- recall rules: asked at a time past its end, is an ended fact recalled for a present
  question (target 0 %); asked `as_of` a time it held, is it among the first 10 (target
  95 % or more);
- the reconciler's end ("I'm back home" ending "I'm in Lisbon this week"): the decision is
  the chat model's and there is none here, so the model is scripted (a real
  OpenAI-compatible server on loopback, tests/fakes/openai_server.py). Its extractor gives
  the statement that a passing situation is over with a topic question and a generic form
  in the person's language ("Where am I staying?", "I am staying somewhere"), never the
  older fact's words; its reconciler answers "end" when the older fact is among the
  existing facts it is shown, "add" otherwise. What is measured is whether the writer puts
  the older fact in front of the model, among that person's other statements above, and
  that the end is then carried out (the older fact active, its end the moment the new one
  was said, the new one kept). Eight situations in English, German, French and Spanish.

Nothing is asserted. --quick: English and German.
"""

from __future__ import annotations

import argparse
import asyncio
import calendar
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.replay import EMBEDDERS, local_embedder
from bench.scripted_model import asked, first_said, shown
from mnemo.build import Core
from mnemo.domain import Action, Category, Scope, Status, Turn
from mnemo.providers.chat import OpenAIChatModel
from mnemo.settings import Settings
from mnemo.store.sqlite import SQLiteStore
from tests.fakes.openai_server import ScriptedOpenAI

LANGUAGES = ("en", "de", "fr", "es", "pt", "it")
QUICK = ("en", "de")
START = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
K = 10

REMEMBER = {
    "en": "Remember that {}.",
    "de": "Merk dir, dass {}.",
    "fr": "Retiens que {}.",
    "es": "Recuerda que {}.",
    "pt": "Lembre-se de que {}.",
    "it": "Ricorda che {}.",
}
WEEKDAY = {
    "en": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "de": ("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"),
    "fr": ("lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"),
    "es": ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"),
    "pt": ("segunda", "terça", "quarta", "quinta", "sexta", "sábado", "domingo"),
    "it": ("lunedì", "martedì", "mercoledì", "giovedì", "venerdì", "sabato", "domenica"),
}
MONTH = {
    "en": "January February March April May June July August September October November December",
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "pt": "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre",
}
NUMBER = {"en": "three", "de": "drei", "fr": "trois", "es": "tres", "pt": "três", "it": "tre"}

# (kind, statement, question) per language; {city}, {day}, {d}, {month} are filled in
TEMPLATES: dict[str, list[tuple[str, str, str]]] = {
    "en": [
        ("week", "I am staying in {city} this week", "Where am I staying?"),
        ("month", "I am working from {city} this month", "Where am I working from?"),
        ("weekday", "my cousin from {city} stays with us until {day}", "Who is staying with us?"),
        ("weeks", "I am training in {city} for the next {n} weeks", "Where am I training?"),
        ("date", "the office in {city} is closed until {month} {d}", "Which office is closed?"),
        ("event", "I ran a half marathon in {city} on Sunday", "Where did I run a half marathon?"),
        ("open", "my brother lives in {city}", "Where does my brother live?"),
    ],
    "de": [
        ("week", "ich diese Woche in {city} übernachte", "Wo übernachte ich?"),
        ("month", "ich diesen Monat von {city} aus arbeite", "Von wo aus arbeite ich?"),
        ("weekday", "mein Cousin aus {city} bis {day} bei uns bleibt", "Wer wohnt bei uns?"),
        ("weeks", "ich für die nächsten {n} Wochen in {city} trainiere", "Wo trainiere ich?"),
        ("date", "das Büro in {city} bis {d}. {month} geschlossen ist", "Welches Büro ist geschlossen?"),
        ("event", "ich am Sonntag einen Halbmarathon in {city} gelaufen bin", "Wo bin ich gelaufen?"),
        ("open", "mein Bruder in {city} wohnt", "Wo wohnt mein Bruder?"),
    ],
    "fr": [
        ("week", "je loge à {city} cette semaine", "Où est-ce que je loge ?"),
        ("month", "je travaille depuis {city} ce mois-ci", "D'où est-ce que je travaille ?"),
        ("weekday", "mon cousin de {city} reste chez nous jusqu'à {day}", "Qui reste chez nous ?"),
        (
            "weeks",
            "je m'entraîne à {city} pendant les {n} prochaines semaines",
            "Où est-ce que je m'entraîne ?",
        ),
        ("date", "le bureau de {city} est fermé jusqu'au {d} {month}", "Quel bureau est fermé ?"),
        ("event", "j'ai couru un semi-marathon à {city} dimanche", "Où ai-je couru ?"),
        ("open", "mon frère habite à {city}", "Où habite mon frère ?"),
    ],
    "es": [
        ("week", "me alojo en {city} esta semana", "¿Dónde me alojo?"),
        ("month", "trabajo desde {city} este mes", "¿Desde dónde trabajo?"),
        (
            "weekday",
            "mi primo de {city} se queda con nosotros hasta el {day}",
            "¿Quién se queda con nosotros?",
        ),
        ("weeks", "entreno en {city} durante las próximas {n} semanas", "¿Dónde entreno?"),
        ("date", "la oficina de {city} está cerrada hasta el {d} de {month}", "¿Qué oficina está cerrada?"),
        ("event", "corrí una media maratón en {city} el domingo", "¿Dónde corrí?"),
        ("open", "mi hermano vive en {city}", "¿Dónde vive mi hermano?"),
    ],
    "pt": [
        ("week", "estou hospedado em {city} esta semana", "Onde estou hospedado?"),
        ("month", "trabalho a partir de {city} este mês", "De onde trabalho?"),
        ("weekday", "o meu primo de {city} fica connosco até {day}", "Quem fica connosco?"),
        ("weeks", "treino em {city} pelas próximas {n} semanas", "Onde treino?"),
        ("date", "o escritório de {city} está fechado até {d} de {month}", "Que escritório está fechado?"),
        ("event", "corri uma meia maratona em {city} no domingo", "Onde corri?"),
        ("open", "o meu irmão mora em {city}", "Onde mora o meu irmão?"),
    ],
    "it": [
        ("week", "alloggio a {city} questa settimana", "Dove alloggio?"),
        ("month", "lavoro da {city} questo mese", "Da dove lavoro?"),
        ("weekday", "mio cugino di {city} resta da noi fino a {day}", "Chi resta da noi?"),
        ("weeks", "mi alleno a {city} per le {n} prossime settimane", "Dove mi alleno?"),
        ("date", "l'ufficio di {city} è chiuso fino al {d} {month}", "Quale ufficio è chiuso?"),
        ("event", "ho corso una mezza maratona a {city} domenica", "Dove ho corso?"),
        ("open", "mio fratello vive a {city}", "Dove vive mio fratello?"),
    ],
}
# (a passing situation, what says it is over, the extractor's topic question, its generic form)
ENDINGS: dict[str, list[tuple[str, str, str, str]]] = {
    "en": [
        (
            "I am staying in Lisbon this week",
            "I am back home in Berlin now",
            "Where am I staying?",
            "I am staying somewhere",
        ),
        (
            "My sister is staying with us until Christmas",
            "My sister went back home to Madrid",
            "Who is staying with us?",
            "Someone is staying with us",
        ),
        (
            "I am off coffee for the next two months",
            "I drink coffee again",
            "Do I drink coffee?",
            "I am off something",
        ),
        ("I am on sick leave until Friday", "I am back at work", "Am I at work?", "I am on some leave"),
        (
            "My car is in the garage this week",
            "I got my car back from the garage",
            "Where is my car?",
            "My car is somewhere",
        ),
        (
            "I am working from home this month",
            "I am back at the office",
            "Where do I work from?",
            "I work from some place",
        ),
        ("I am on a diet until the summer", "I stopped my diet", "Am I on a diet?", "I am on some diet"),
        (
            "My parents are visiting us for the next three weeks",
            "My parents flew home",
            "Who is visiting us?",
            "Someone is visiting us",
        ),
    ],
    "de": [
        (
            "Ich übernachte diese Woche in Lissabon",
            "Ich bin wieder zu Hause in Berlin",
            "Wo übernachte ich?",
            "Ich übernachte irgendwo",
        ),
        (
            "Meine Schwester wohnt bis Weihnachten bei uns",
            "Meine Schwester ist nach Madrid zurückgefahren",
            "Wer wohnt bei uns?",
            "Jemand wohnt bei uns",
        ),
        (
            "Ich verzichte die nächsten zwei Monate auf Kaffee",
            "Ich trinke wieder Kaffee",
            "Trinke ich Kaffee?",
            "Ich verzichte auf irgendetwas",
        ),
        (
            "Ich bin bis Freitag krankgeschrieben",
            "Ich arbeite wieder",
            "Bin ich bei der Arbeit?",
            "Ich bin aus irgendeinem Grund nicht bei der Arbeit",
        ),
        (
            "Mein Auto ist diese Woche in der Werkstatt",
            "Ich habe mein Auto aus der Werkstatt zurück",
            "Wo ist mein Auto?",
            "Mein Auto ist irgendwo",
        ),
        (
            "Ich arbeite diesen Monat von zu Hause",
            "Ich bin wieder im Büro",
            "Von wo arbeite ich?",
            "Ich arbeite von irgendwo",
        ),
        (
            "Ich mache bis zum Sommer eine Diät",
            "Ich habe meine Diät beendet",
            "Mache ich eine Diät?",
            "Ich mache irgendeine Diät",
        ),
        (
            "Meine Eltern besuchen uns für die nächsten drei Wochen",
            "Meine Eltern sind nach Hause geflogen",
            "Wer besucht uns?",
            "Jemand besucht uns",
        ),
    ],
    "fr": [
        (
            "Je loge à Lisbonne cette semaine",
            "Je suis de retour chez moi à Berlin",
            "Où est-ce que je loge ?",
            "Je loge quelque part",
        ),
        (
            "Ma sœur reste chez nous jusqu'à Noël",
            "Ma sœur est rentrée à Madrid",
            "Qui reste chez nous ?",
            "Quelqu'un reste chez nous",
        ),
        (
            "Je ne bois pas de café pendant les deux prochains mois",
            "Je bois de nouveau du café",
            "Est-ce que je bois du café ?",
            "Je ne bois pas de quelque chose",
        ),
        (
            "Je suis en arrêt maladie jusqu'à vendredi",
            "J'ai repris le travail",
            "Est-ce que je travaille ?",
            "Je suis en congé pour une raison",
        ),
        (
            "Ma voiture est au garage cette semaine",
            "J'ai récupéré ma voiture au garage",
            "Où est ma voiture ?",
            "Ma voiture est quelque part",
        ),
        (
            "Je travaille de chez moi ce mois-ci",
            "Je suis de retour au bureau",
            "D'où est-ce que je travaille ?",
            "Je travaille de quelque part",
        ),
        (
            "Je suis au régime jusqu'à l'été",
            "J'ai arrêté mon régime",
            "Est-ce que je suis au régime ?",
            "Je suis un certain régime",
        ),
        (
            "Mes parents nous rendent visite pendant les trois prochaines semaines",
            "Mes parents sont rentrés chez eux en avion",
            "Qui nous rend visite ?",
            "Quelqu'un nous rend visite",
        ),
    ],
    "es": [
        (
            "Me alojo en Lisboa esta semana",
            "Ya estoy de vuelta en casa en Berlín",
            "¿Dónde me alojo?",
            "Me alojo en algún sitio",
        ),
        (
            "Mi hermana se queda con nosotros hasta Navidad",
            "Mi hermana volvió a Madrid",
            "¿Quién se queda con nosotros?",
            "Alguien se queda con nosotros",
        ),
        ("No tomo café durante los próximos dos meses", "Vuelvo a tomar café", "¿Tomo café?", "No tomo algo"),
        (
            "Estoy de baja hasta el viernes",
            "Ya volví al trabajo",
            "¿Estoy trabajando?",
            "Estoy de algún tipo de baja",
        ),
        (
            "Mi coche está en el taller esta semana",
            "Recogí mi coche del taller",
            "¿Dónde está mi coche?",
            "Mi coche está en algún sitio",
        ),
        (
            "Trabajo desde casa este mes",
            "Volví a la oficina",
            "¿Desde dónde trabajo?",
            "Trabajo desde algún sitio",
        ),
        ("Estoy a dieta hasta el verano", "Dejé la dieta", "¿Estoy a dieta?", "Estoy en alguna dieta"),
        (
            "Mis padres nos visitan durante las próximas tres semanas",
            "Mis padres volvieron a casa en avión",
            "¿Quién nos visita?",
            "Alguien nos visita",
        ),
    ],
}
ENDING_LANGUAGES = ("en", "de", "fr", "es")
CITIES = ("Lisbon", "Porto", "Oslo", "Bergen", "Kyoto", "Lima", "Quito")
ROUNDS = 5  # each template said this many times a language, on other days, of other cities


@dataclass
class Statement:
    language: str
    kind: str
    text: str
    question: str
    said: datetime
    end: datetime | None  # the end its words give (None: no end)


def _next_midnight(day: date) -> datetime:
    return datetime.combine(day + timedelta(days=1), datetime.min.time(), UTC)


def statements(languages: tuple[str, ...]) -> list[Statement]:
    """Every statement, with the end its words give, worked out here from the template's kind."""
    out = []
    for lang in languages:
        for r in range(ROUNDS):
            for i, (kind, template, question) in enumerate(TEMPLATES[lang]):
                said = START + timedelta(days=53 * r + 3 * i, hours=r)
                day = said.date()
                target = day + timedelta(days=2 + r)  # a weekday or a date ahead of the day said
                end: datetime | None = None
                if kind == "week":
                    end = _next_midnight(day + timedelta(days=6 - day.weekday()))
                elif kind == "month":
                    end = _next_midnight(
                        date(day.year, day.month, calendar.monthrange(day.year, day.month)[1])
                    )
                elif kind == "weekday":
                    end = _next_midnight(target)
                elif kind == "weeks":
                    end = _next_midnight(day + timedelta(days=7 * 3 - 1))
                elif kind == "date":
                    end = _next_midnight(target)
                months = MONTH[lang].split()
                text = template.format(
                    city=CITIES[(r + i) % len(CITIES)],
                    day=WEEKDAY[lang][target.weekday()],
                    n=NUMBER[lang],
                    d=target.day,
                    month=months[target.month - 1],
                )
                out.append(Statement(lang, kind, REMEMBER[lang].format(text), question, said, end))
    return out


async def _person(lang: str, embedder, chat, tmp: Path, clock_at: list[datetime]) -> tuple[Core, Scope]:
    """`lang`'s person's memory (tmp/<lang>.db), with the clock at clock_at[0]."""
    store = SQLiteStore(tmp / f"{lang}.db", clock=lambda: clock_at[0])
    settings = Settings(data_dir=tmp).for_model(embedder.model_name)
    core = await Core(store, embedder, chat, settings=settings, clock=lambda: clock_at[0]).open()
    return core, Scope((await core.memory.accounts.user(f"person-{lang}")).id)


async def language_run(lang: str, said: list[Statement], embedder, tmp: Path) -> dict:
    """One person's memory in `lang`: each statement learnt on its day, then the questions."""
    clock_at = [said[0].said]
    core, scope = await _person(lang, embedder, None, tmp, clock_at)
    memory = core.memory
    learnt = []
    for s in sorted(said, key=lambda s: s.said):
        clock_at[0] = s.said
        report = await memory.remember(Turn.of(scope, ("user", s.text)))
        # a statement said before (the same city, months later) reinforces its fact
        kept = next(e.fact_id for e in report.events if e.action in (Action.CREATE, Action.REINFORCE))
        learnt.append((s, await memory.get(scope, kept)))
    out = {"resolved": 0, "with_end": 0, "wrongly_ended": 0, "open": 0, "ended_recalled": 0, "past_found": 0}
    # a fact said again takes the end of its latest statement: each fact is scored by that one
    latest = {fact.id: st for st, fact in learnt}
    for fid, st in latest.items():
        fact = await memory.get(scope, fid)
        if st.end is None:
            out["open"] += 1
            out["wrongly_ended"] += fact.valid_to is not None
            continue
        out["with_end"] += 1
        out["resolved"] += fact.valid_to == st.end
        clock_at[0] = st.end + timedelta(days=2)  # asked after the end: is it still taken as true?
        now_ids = [h.fact.id for h in await memory.recall(st.question, scope, limit=K)]
        out["ended_recalled"] += fid in now_ids
    for st, fact in learnt:  # asked about a time each statement held: found?
        if st.end is not None:
            during = st.said + timedelta(hours=1)
            past_ids = [h.fact.id for h in await memory.recall(st.question, scope, as_of=during, limit=K)]
            out["past_found"] += fact.id in past_ids
            out["asked_past"] = out.get("asked_past", 0) + 1
    await core.close()
    return out


class EndingScript:
    """The scripted model: extracts the statement with its cues; ends the situation when shown."""

    def __init__(self, cases: list[tuple[str, str, str, str]]) -> None:
        self.by_over = {over: (situation, topic, generic) for situation, over, topic, generic in cases}
        self.shown: dict[str, bool] = {}

    def __call__(self, body: dict) -> str | None:
        kind, user = asked(body)
        if kind == "extract":
            said = first_said(user)
            if said is None or said not in self.by_over:
                return json.dumps({"facts": []})
            _, topic, generic = self.by_over[said]
            fact = {
                "text": said,
                "category": "other",
                "confidence": 0.95,
                "speaker": "user",
                "message": 1,
                "topic": topic,
                "replaces": generic,
            }
            return json.dumps({"facts": [fact]})
        if kind == "reconcile":
            existing, new = shown(user)
            decisions = []
            for number, text in new:
                target = existing.get(self.by_over.get(text, ("",))[0])
                self.shown[text] = target is not None
                decisions.append({"new": number, "action": "end" if target else "add", "target": target})
            return json.dumps({"decisions": decisions})
        return None


async def endings_run(lang: str, embedder, tmp: Path, server: ScriptedOpenAI) -> dict:
    """In `lang`'s person's memory (its statements above), each passing situation said, and a
    day later that it is over: is the older fact shown to the reconciler, and ended?"""
    cases = ENDINGS[lang]
    script = EndingScript(cases)
    server.responder = script
    clock_at = [START + timedelta(days=300)]
    chat = OpenAIChatModel(server.base_url, None, "scripted-model", max_retries=0)
    core, scope = await _person(lang, embedder, chat, tmp, clock_at)
    memory = core.memory
    out = {"situations": len(cases), "shown": 0, "ended": 0, "new_kept": 0}
    for situation, over, _, _ in cases:
        clock_at[0] += timedelta(days=2)
        held = await memory.add(
            scope, situation, category=Category.OTHER, valid_to=clock_at[0] + timedelta(days=7)
        )
        clock_at[0] += timedelta(days=1)
        said = clock_at[0]
        await memory.remember(Turn.of(scope, ("user", over), ("assistant", "Noted.")))
        out["shown"] += script.shown.get(over, False)
        after = await memory.get(scope, held.id)
        out["ended"] += after.status == Status.ACTIVE and after.valid_to == said
        out["new_kept"] += any(f.text == over for f in await memory.list(scope, limit=1000))
    await core.close()
    return out


async def main(args: argparse.Namespace) -> dict:
    languages = QUICK if args.quick else LANGUAGES
    said = statements(languages)
    embedder = local_embedder(args.embedder)
    per: dict[str, dict] = {}
    started = time.perf_counter()
    endings: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-time-bound-") as tmp, ScriptedOpenAI() as server:
        for lang in languages:
            per[lang] = await language_run(lang, [s for s in said if s.language == lang], embedder, Path(tmp))
            if lang in ENDING_LANGUAGES:
                endings[lang] = await endings_run(lang, embedder, Path(tmp), server)
    total = {k: sum(p[k] for p in per.values()) for k in next(iter(per.values()))}
    endings["all"] = {k: sum(p[k] for p in endings.values()) for k in next(iter(endings.values()))}
    summary = {
        "embedder": embedder.model_name,
        "statements": len(said),
        "per_language": per,
        "total": total,
        "endings": endings,
        "seconds": round(time.perf_counter() - started, 1),
    }
    for lang, p in {**per, "all": total}.items():
        print(
            f"{lang:4} ends read exactly {p['resolved']:3}/{p['with_end']:3}"
            f"  open or events given an end {p['wrongly_ended']:3}/{p['open']:3}"
            f"  ended and recalled now {p['ended_recalled']:3}/{p['with_end']:3}"
            f"  found as_of a time it held (top {K}) {p['past_found']:3}/{p['asked_past']:3}"
        )
    for lang, e in endings.items():
        print(
            f"{lang:4} reconciler's end: the situation shown {e['shown']:2}/{e['situations']:2}"
            f"  ended when it was said to be over {e['ended']:2}/{e['situations']:2}"
            f"  the new statement kept {e['new_kept']:2}/{e['situations']:2}"
        )
    print(f"{len(said)} statements, {summary['seconds']} s ({embedder.model_name})")
    return summary


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="multilingual-e5")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()
    out = asyncio.run(main(args))
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    cli()
