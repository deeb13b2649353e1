"""Synthetic first-person facts and questions for the recall benchmark.

Facts come from ~40 sentence templates filled from word lists (people,
relations, places, foods, jobs, hobbies, dates, numbers); questions come from
the same vocabulary, so some of them are about facts that exist and some are
not. Everything is drawn from a seeded `random.Random`, so a run is repeatable.

Each fact also carries a *key*: its template, the value of its first slot and
a variant of its second (e.g. "My {rel} {name} lives in {city}" with rel =
"sister" and name in variant 3 of 4). The benchmark embeds one real sentence
per key (the pool, ~4,900 sentences) and gives every fact with that key the
pool vector plus a little noise: embedding 200k sentences for real would take
the 2-core machine a quarter of an hour, and recall latency depends on how
many vectors there are, not on which.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass


def _L(words: str) -> list[str]:
    """A word list written as one string, "|" between entries."""
    return [w.strip() for w in words.split("|")]


VOCAB: dict[str, list[str]] = {
    "rel": _L(
        "sister|brother|mother|father|aunt|uncle|cousin|niece|nephew|daughter|son|wife|husband|"
        "partner|grandmother|grandfather|stepmother|stepbrother|godmother|neighbour|colleague|"
        "boss|roommate|flatmate|mentor"
    ),
    "name": _L(
        "Anna|Ben|Chloe|Dario|Elena|Farid|Greta|Hugo|Ines|Jonas|Kofi|Lena|Marta|Nadia|Omar|Priya|"
        "Quinn|Rosa|Sami|Tomasz|Uma|Viktor|Wen|Xavier|Yara|Zane|Aiko|Bruno|Clara|Dmitri|Emil|"
        "Fatima|Gil|Hana|Ivan|Julia|Kenji|Lucia|Mateo|Nora|Oscar|Pia|Rafael|Sofia|Theo|Ursula|"
        "Vera|Will|Ximena|Yusuf|Zoe|Amir|Bea|Carlos|Daphne|Eitan|Freya|Gus|Helga|Ilya|Jade|Karim|"
        "Liv|Milo|Noor|Otto|Paula|Reza|Signe|Tariq|Valentina|Wanda|Yosef|Zora|Alma|Boris|Cyrus|"
        "Dora|Enzo|Flora|Goran|Hiro|Isla|Joel|Kira|Luca|Mina|Nils|Olga|Pavel|Rina|Stefan|Tova|"
        "Ugo|Vilma|Wolf|Yuki|Zeno"
    ),
    "surname": _L(
        "Adler|Baptiste|Chen|Dubois|Eriksen|Fischer|Garcia|Haddad|Ito|Jansen|Kowalski|Lopez|"
        "Moreau|Nakamura|Okafor|Petrov|Quiroga|Rossi|Schmidt|Tanaka|Usman|Vargas|Weber|Xu|Yilmaz|"
        "Zimmermann"
    ),
    "city": _L(
        "Lisbon|Porto|Madrid|Seville|Barcelona|Lyon|Marseille|Paris|Brussels|Ghent|Amsterdam|"
        "Utrecht|Hamburg|Berlin|Munich|Leipzig|Vienna|Graz|Zurich|Geneva|Milan|Turin|Naples|"
        "Bologna|Rome|Athens|Sofia|Bucharest|Krakow|Warsaw|Prague|Brno|Budapest|Ljubljana|Zagreb|"
        "Split|Oslo|Bergen|Stockholm|Malmo|Copenhagen|Aarhus|Helsinki|Tallinn|Riga|Vilnius|"
        "Dublin|Cork|Glasgow|Leeds|Bristol|Manchester|London|Reykjavik|Istanbul|Izmir|Cairo|"
        "Casablanca|Nairobi|Lagos|Accra|Johannesburg|Toronto|Montreal|Vancouver|Boston|Chicago|"
        "Denver|Seattle|Austin|Portland|Atlanta|Miami|Havana|Mexico|Bogota|Lima|Quito|Santiago|"
        "Montevideo|Tokyo|Osaka|Kyoto|Seoul|Busan|Taipei|Manila|Hanoi|Bangkok|Singapore|Jakarta|"
        "Mumbai|Pune|Delhi|Chennai|Kathmandu|Dubai|Tehran|Tbilisi|Yerevan|Sydney|Melbourne|Perth|"
        "Auckland|Wellington"
    ),
    "country": _L(
        "Portugal|Spain|France|Belgium|Germany|Austria|Switzerland|Italy|Greece|Croatia|Slovenia|"
        "Poland|Norway|Sweden|Denmark|Finland|Estonia|Ireland|Scotland|Iceland|Turkey|Morocco|"
        "Egypt|Kenya|Ghana|Canada|Mexico|Cuba|Colombia|Peru|Chile|Uruguay|Japan|Korea|Taiwan|"
        "Vietnam|Thailand|Indonesia|India|Nepal|Georgia|Armenia|Australia|Zealand|Jordan|"
        "Tanzania|Namibia|Argentina"
    ),
    "food": _L(
        "mushrooms|olives|anchovies|aubergine|coriander|tofu|lentils|chickpeas|avocado|mango|"
        "kimchi|goat-cheese|blue-cheese|liver|oysters|mussels|sardines|spinach|kale|beetroot|"
        "okra|fennel|rhubarb|figs|durian|jackfruit|seitan|tempeh|quinoa|couscous|polenta|"
        "sauerkraut|pickles|chillies|wasabi|marzipan|liquorice|porridge|granola|yoghurt"
    ),
    "dish": _L(
        "ramen|paella|pho|lasagne|biryani|moussaka|pad thai|shakshuka|pierogi|goulash|ceviche|"
        "bibimbap|falafel|risotto|dal|tagine|katsu curry|gnocchi|empanadas|laksa|borscht|"
        "bouillabaisse|tacos al pastor|jollof rice|mapo tofu|feijoada|okonomiyaki|carbonara|"
        "khachapuri|poutine"
    ),
    "allergen": _L(
        "peanuts|tree nuts|shellfish|penicillin|pollen|cats|dust mites|latex|bee stings|sesame|"
        "soy|gluten|eggs|milk|strawberries|kiwi|celery|mustard|ibuprofen|horses|mould|nickel"
    ),
    "job": _L(
        "nurse|software engineer|teacher|architect|accountant|electrician|chef|pharmacist|"
        "data analyst|graphic designer|plumber|lawyer|dentist|journalist|translator|"
        "physiotherapist|carpenter|pilot|librarian|vet|social worker|product manager|baker|"
        "firefighter|midwife|civil engineer|photographer|tour guide|paramedic|sound engineer|"
        "barista|researcher|pastry chef"
    ),
    "employer": _L(
        "a logistics startup|the city hospital|a small bakery|the public library|a bank downtown|"
        "a design studio|the university|a law firm|an airline|a games company|the local council|"
        "a wine importer|a solar panel installer|a children's charity|a bike shop|"
        "the regional newspaper|a pharma company"
    ),
    "hobby": _L(
        "bouldering|pottery|birdwatching|sourdough baking|chess|knitting|woodworking|"
        "salsa dancing|photography|gardening|trail running|sailing|calligraphy|beekeeping|"
        "astronomy|kayaking|board games|origami|watercolour painting|fly fishing|embroidery|"
        "geocaching|home brewing|skateboarding|yoga|crossword puzzles|stand-up comedy|"
        "film photography"
    ),
    "sport": _L("tennis|squash|badminton|football|basketball|volleyball|padel|golf|rugby|cricket|hockey"),
    "instrument": _L("piano|guitar|violin|cello|drums|saxophone|trumpet|flute|ukulele|harp|clarinet|bass"),
    "pet": _L("dog|cat|rabbit|parrot|tortoise|hamster|ferret|goldfish|canary|gecko|horse"),
    "petname": _L(
        "Biscuit|Pepper|Luna|Mochi|Ziggy|Olive|Toffee|Nacho|Pixel|Rolo|Maple|Bruno|Kiwi|Waffles|"
        "Pickle|Socks|Juniper|Noodle|Ginger|Pumpkin|Smudge|Tofu|Clementine|Bagel|Basil|Fig"
    ),
    "language": _L(
        "Spanish|French|German|Italian|Portuguese|Dutch|Polish|Greek|Turkish|Arabic|Japanese|"
        "Korean|Mandarin|Hindi|Swahili|Swedish|Russian|Hebrew"
    ),
    "month": _L("January|February|March|April|May|June|July|August|September|October|November|December"),
    "weekday": _L("Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"),
    "year": [str(y) for y in range(1978, 2026)],
    "day": [str(d) for d in range(1, 29)],
    "num": [str(n) for n in range(2, 41)],
    "hour": [f"{h} {m}" for h in range(5, 10) for m in ("o'clock", "fifteen", "thirty", "forty-five")],
    "car": _L(
        "Fiat Panda|Toyota Corolla|Volkswagen Golf|Renault Clio|Skoda Octavia|Honda Civic|"
        "Tesla Model 3|Volvo V60|Mini Cooper|Ford Focus|Kia Niro|Peugeot 208|Subaru Outback|"
        "Nissan Leaf|Mazda MX-5|Dacia Duster"
    ),
    "colour": _L("red|blue|green|yellow|grey|black|white|orange|purple|teal|navy|silver"),
    "condition": _L(
        "asthma|migraines|type 1 diabetes|high blood pressure|eczema|hay fever|"
        "an underactive thyroid|coeliac disease|tinnitus|a bad knee|lower back pain|insomnia|"
        "anaemia|acid reflux"
    ),
    "medication": _L(
        "an inhaler|sumatriptan|insulin|ramipril|a steroid cream|cetirizine|levothyroxine|"
        "iron tablets|omeprazole|melatonin|vitamin D|ibuprofen gel"
    ),
    "team": _L(
        "Benfica|Ajax|Celtic|Napoli|Borussia Dortmund|Boca Juniors|the Chicago Cubs|"
        "the Boston Celtics|Galatasaray|Olympique Lyonnais|the All Blacks|Rapid Vienna"
    ),
    "street": _L(
        "Elm Street|Harbour Road|Mill Lane|Station Avenue|Rosemary Street|Canal Walk|Church Road|"
        "Victoria Street|Orchard Lane|Bridge Street|Park Terrace|Kingsway|Market Square|"
        "Linden Avenue|Quay Street|Chestnut Grove"
    ),
    "school": _L(
        "the University of Porto|Trinity College|ETH Zurich|the Sorbonne|the University of Leeds|"
        "McGill|Kyoto University|the University of Ghana|a community college|the art academy|"
        "the conservatory|the polytechnic"
    ),
    "subject": _L(
        "biology|history|economics|mechanical engineering|linguistics|nursing|computer science|"
        "philosophy|architecture|chemistry|law|music|statistics|marine biology|psychology|"
        "fine art|geography|medicine"
    ),
    "drink": _L(
        "black coffee|green tea|an oat flat white|mint tea|espresso|a matcha latte|orange juice|"
        "a protein shake|rooibos|hot water with lemon|chai"
    ),
    "genre": _L("jazz|punk|folk|techno|reggae|metal|soul|blues|grunge|indie|funk|flamenco"),
    "author": _L(
        "Ursula K. Le Guin|Haruki Murakami|Chimamanda Ngozi Adichie|Terry Pratchett|"
        "Elena Ferrante|Kazuo Ishiguro|Toni Morrison|Isabel Allende|Italo Calvino|Zadie Smith|"
        "Jose Saramago|Olga Tokarczuk|Mary Beard|Ted Chiang"
    ),
}

# The first slot of each template is its key (see the module docstring).
TEMPLATES: list[str] = [
    "My {rel} {name} lives in {city}",
    "My {rel} {name} moved to {city} in {year}",
    "My {rel} {name} works as a {job} in {city}",
    "My {rel} {name} is allergic to {allergen}",
    "My {rel} {name} has {num} grandchildren and lives near {city}",
    "My {rel} {name} studies {subject} at {school}",
    "My {rel}'s birthday is on {month} {day}, and {name} always organises the party",
    "I met my {rel} {name} at {school} in {year}",
    "{name}'s birthday is on {month} {day} and they are turning {num}",
    "{name} is my {rel}'s partner and works as a {job}",
    "I owe {name} {num} euros for the {genre} concert tickets",
    "I'm reading a book by {author} that {name} lent me in {month}",
    "I found out I'm allergic to {allergen} in {month} {year}",
    "I work as a {job} at {employer} in {city}",
    "I've worked as a {job} since {year}, mostly on {weekday}s",
    "I have {condition} and have taken {medication} for it since {year}",
    "I play the {instrument} every {weekday} evening with {name}",
    "I started learning the {instrument} in {year} after a concert in {city}",
    "I have a {pet} called {petname} who is {num} years old",
    "I adopted my {pet} {petname} in {month} {year} from a shelter in {city}",
    "My favourite dish is {dish}, especially the one from a place in {city}",
    "I cook {dish} for my {rel} {name} about {num} times a year",
    "I stopped eating {food} in {month} {year} because it upsets my stomach",
    "I love {food} and buy it at the market on {weekday}s in {city}",
    "I speak {language} and I'm learning {language2} with {name} since {year}",
    "I went on holiday to {country} in {month} {year} with {name}",
    "I'm saving for a trip to {country} next {month} to see {name}",
    "I visited {city} with my {rel} {name} in {year}",
    "I usually wake up at {hour} on {weekday}s and go running",
    "I play {sport} with {name} on {weekday} mornings at {street}",
    "I support {team} and go to about {num} matches a year with {name}",
    "I drive a {car} in {colour} that I bought in {city} in {year}",
    "My doctor is Dr {surname} at the clinic on {street}, I see them every {month}",
    "I've lived at {num} {street} in {city} since {year}",
    "I studied {subject} at {school} and graduated in {year}",
    "I drink {drink} every morning before {hour} while reading {author}",
    "My favourite {genre} band played in {city} in {year} and I went with {name}",
    "I've been into {hobby} since {year}, thanks to {name}",
    "I spend {weekday} afternoons on {hobby} with my {rel} {name}",
    "I painted my bedroom {colour} in {month} {year} with help from {name}",
]

QUESTIONS: list[str] = [
    "where does my {rel} live?",
    "what does my {rel} do for work?",
    "what am I allergic to?",
    "is my {rel} allergic to anything?",
    "what do I do for a living?",
    "when is {name}'s birthday?",
    "when is my {rel}'s birthday?",
    "what instrument do I play?",
    "what is my {pet}'s name?",
    "which languages do I speak?",
    "where did I go on holiday in {year}?",
    "when did I visit {city}?",
    "who is {name}?",
    "what's my favourite food?",
    "do I like {food}?",
    "what car do I drive?",
    "what time do I get up?",
    "which football team do I support?",
    "what medication do I take?",
    "who is my doctor?",
    "what's my home address?",
    "where did I go to university?",
    "what do I drink in the morning?",
    "what are my hobbies?",
    "how long have I been doing {hobby}?",
    "how many grandchildren does my {rel} have?",
    "how much money do I owe {name}?",
    "what book am I reading at the moment?",
    "what do I do on {weekday}s?",
    "where is {name} living now?",
    "what sports do I play?",
    "what happened in {year}?",
    "who do I know in {city}?",
    "what did my {rel} study?",
    "what health problems do I have?",
    "do I have any pets?",
]


@dataclass(frozen=True)
class SynthFact:
    text: str
    key: tuple[int, str, int]  # (template index, first filler, variant of the second)


_INDEX = {slot: {v: i for i, v in enumerate(values)} for slot, values in VOCAB.items()}


def _vocab(slot: str) -> list[str]:
    """`{language2}` draws from the same list as `{language}`."""
    return VOCAB[slot.rstrip("0123456789")]


def _slots(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


def _render(template: str, rng: random.Random, fixed: dict[str, str] | None = None) -> tuple[str, dict]:
    values = dict(fixed or {})
    for slot in _slots(template):
        values.setdefault(slot, rng.choice(_vocab(slot)))
    return template.format(**values), values


def _key(i: int, values: dict[str, str], variants: int) -> tuple[int, str, int]:
    first, second = _slots(TEMPLATES[i])[:2]
    return i, values[first], _INDEX[second.rstrip("0123456789")][values[second]] % variants


def make_facts(rng: random.Random, n: int, taken: set[str], variants: int) -> list[SynthFact]:
    """n new facts, none of whose texts is in `taken` (which is updated)."""
    out: list[SynthFact] = []
    while len(out) < n:
        i = rng.randrange(len(TEMPLATES))
        text, values = _render(TEMPLATES[i], rng)
        if text not in taken:
            taken.add(text)
            out.append(SynthFact(text, _key(i, values, variants)))
    return out


def pool_sentences(rng: random.Random, variants: int) -> dict[tuple[int, str, int], str]:
    """One real sentence per key: the template with the same first filler, and a
    second filler of the same variant (`variants` of them per first filler)."""
    out = {}
    for i, template in enumerate(TEMPLATES):
        first, second = _slots(template)[:2]
        for value in _vocab(first):
            for j in range(min(variants, len(_vocab(second)))):
                fixed = {first: value, second: _vocab(second)[j]}
                out[(i, value, j)] = _render(template, rng, fixed)[0]
    return out


def make_questions(rng: random.Random, n: int) -> list[str]:
    return [_render(rng.choice(QUESTIONS), rng)[0] for _ in range(n)]
