"""bench/data/multilingual.jsonl as written, and what bench/multilingual_data.py says of a broken copy."""

from __future__ import annotations

import dataclasses
import json
import re
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.multilingual_data import DEFAULT, LANGUAGES, DataError, Template, load

LATIN = ("en", "de", "es", "fr", "pt")
KANA_KANJI = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
CYRILLIC = re.compile(r"[\u0400-\u04ff]")
# English function words of four letters or more: what is left of a sentence is its content words
STOP_WORDS = set(
    "what when where which whom whose does have been being were with that this these those from into "
    "your yours mine they them their there then than some would could should will shall must about "
    "also just very".split()
)


@pytest.fixture(scope="module")
def templates() -> list[Template]:
    return load()


def asked(templates: list[Template]) -> list[Template]:
    return [t for t in templates if t.questions is not None]


def texts(templates: list[Template]) -> list[tuple[str, str, str]]:
    """(template id, language, text) for every fact and question."""
    out = [(t.id, lang, t.facts[lang]) for t in templates for lang in LANGUAGES]
    return out + [(t.id, lang, t.questions[lang]) for t in asked(templates) for lang in LANGUAGES]


def test_the_set_holds_120_templates_60_asked_in_seven_languages(templates):
    assert LANGUAGES == ("en", "de", "es", "fr", "pt", "ja", "ru")
    assert len(templates) == 120
    assert len(asked(templates)) == 60
    assert len({t.id for t in templates}) == 120
    assert all(tuple(t.facts) == LANGUAGES for t in templates)
    assert all(tuple(t.questions) == LANGUAGES for t in asked(templates))
    # a life, not one topic: identity, home, work, family, friends, pets, health, food, hobbies, ...
    assert len({t.topic for t in templates}) >= 10


def test_every_text_is_one_trimmed_sentence(templates):
    for tid, lang, text in texts(templates):
        assert text == text.strip() and text, (tid, lang)
        assert "\n" not in text, (tid, lang)
    for t in templates:
        for lang in LANGUAGES:
            assert t.facts[lang].endswith("。" if lang == "ja" else "."), (t.id, lang)
    for t in asked(templates):
        for lang in LANGUAGES:
            assert t.questions[lang].endswith("？" if lang == "ja" else "?"), (t.id, lang)


def test_each_language_is_written_in_its_script(templates):
    for tid, lang, text in texts(templates):
        if lang == "ja":
            assert KANA_KANJI.search(text) and not CYRILLIC.search(text), (tid, text)
        elif lang == "ru":
            letters = [c for c in text if c.isalpha()]
            cyrillic = sum(1 for c in letters if CYRILLIC.match(c))
            assert cyrillic > len(letters) / 2, (tid, text)  # a Latin "D" of "витамин D" may stay
        else:
            assert not KANA_KANJI.search(text) and not CYRILLIC.search(text), (tid, lang, text)


def test_the_latin_script_languages_are_translated_not_copied(templates):
    for lang in LATIN[1:]:
        same = [t.id for t in templates if t.facts[lang] == t.facts["en"]]
        same += [t.id for t in asked(templates) if t.questions[lang] == t.questions["en"]]
        assert len(same) <= 3, (lang, same)


def test_no_question_is_a_fact_or_holds_its_fact(templates):
    facts = {t.facts[lang].casefold() for t in templates for lang in LANGUAGES}
    for t in asked(templates):
        for lang in LANGUAGES:
            question = t.questions[lang].casefold()
            assert question not in facts, (t.id, lang)
            assert t.facts[lang].casefold().rstrip(".。") not in question, (t.id, lang)


def content_words(text: str) -> set[str]:
    words = re.findall(r"[^\W\d_]+", text.lower())
    return {w for w in words if len(w) >= 4 and w not in STOP_WORDS}


def test_the_english_questions_paraphrase_their_facts(templates, record_property):
    """The median share of a question's content words that its fact also has: low, or lexical
    search would find the answer by the question's own words."""
    shares = []
    for t in asked(templates):
        question = content_words(t.questions["en"])
        shares.append(len(question & content_words(t.facts["en"])) / len(question) if question else 0.0)
    median = statistics.median(shares)
    record_property("median_question_words_in_fact_en", median)
    assert median < 0.34, f"median share of question words in the fact: {median:.2f}"


def test_the_content_words_are_counted_as_said():
    assert content_words("What's my sister's line of work?") == {"sister", "line", "work"}
    assert content_words("My sister Miriam works as a midwife.") == {"sister", "miriam", "works", "midwife"}


def test_a_template_cannot_be_changed_once_loaded(templates):
    with pytest.raises(dataclasses.FrozenInstanceError):
        templates[0].topic = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        templates[0].facts["en"] = "I live on the moon."  # type: ignore[index]


# --- a broken file: the loader says what is wrong and where ---------------------------------------


def raw_lines() -> list[dict]:
    return [json.loads(line) for line in DEFAULT.read_text(encoding="utf-8").splitlines()]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def first_asked(rows: list[dict]) -> dict:
    return next(r for r in rows if r["questions"] is not None)


def _drop_fact_language(rows):
    del rows[41]["facts"]["ja"]
    return ["f042", "languages missing ['ja']", ":42:"]


def _drop_question_language(rows):
    del first_asked(rows)["questions"]["ru"]
    return ["f001", "questions", "missing ['ru']"]


def _empty_questions(rows):
    rows[5]["questions"] = {}
    return ["f006", "questions", "missing ['en', 'de', 'es', 'fr', 'pt', 'ja', 'ru']"]


def _blank_text(rows):
    rows[9]["facts"]["de"] = "   "
    return ["f010", "facts", "no text", "['de']"]


def _number_for_text(rows):
    rows[6]["questions"]["es"] = 42
    return ["f007", "questions", "no text", "['es']"]


def _unknown_language(rows):
    rows[2]["facts"]["it"] = "Sono nata a Graz."
    return ["f003", "unknown ['it']"]


def _id_twice(rows):
    rows.append(dict(rows[0]))
    return ["f001", "used twice", ":121:"]


def _no_id(rows):
    rows[3]["id"] = ""
    return [":4:", "no id"]


def _missing_field(rows):
    del rows[4]["topic"]
    return ["f005", "missing ['topic']"]


def _unknown_field(rows):
    rows[4]["answer"] = "left"
    return ["f005", "unknown ['answer']"]


def _facts_as_list(rows):
    rows[7]["facts"] = list(rows[7]["facts"].values())
    return ["f008", "facts", "not an object"]


@pytest.mark.parametrize(
    "tamper",
    [
        _drop_fact_language,
        _drop_question_language,
        _empty_questions,
        _blank_text,
        _number_for_text,
        _unknown_language,
        _id_twice,
        _no_id,
        _missing_field,
        _unknown_field,
        _facts_as_list,
    ],
)
def test_a_tampered_file_is_refused_naming_the_template(tmp_path, tamper: Callable[[list[dict]], list[str]]):
    rows = raw_lines()
    expected = tamper(rows)
    with pytest.raises(DataError) as refused:
        load(write(tmp_path / "multilingual.jsonl", rows))
    for part in expected:
        assert part in str(refused.value)


def test_an_untouched_copy_loads_as_the_original(tmp_path, templates):
    assert load(write(tmp_path / "copy.jsonl", raw_lines())) == templates


def test_a_file_that_is_not_json_lines_is_refused(tmp_path):
    path = tmp_path / "broken.jsonl"
    rows = raw_lines()
    path.write_text(json.dumps(rows[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match=r":2: not JSON"):
        load(path)
    path.write_text('["f001"]\n', encoding="utf-8")
    with pytest.raises(DataError, match=r":1: not a JSON object"):
        load(path)
    path.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(DataError, match="no templates"):
        load(path)
    path.write_bytes(json.dumps(rows[0]).encode() + b"\n\xff\xfe\n")
    with pytest.raises(DataError, match="not UTF-8"):
        load(path)
