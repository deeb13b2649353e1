"""bench/longmemeval.py's scores: turn recall, session recall, and the two reciprocal ranks."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.longmemeval import Question, Turn, scores

AT = datetime(2023, 5, 1, tzinfo=UTC)


def turn(session: str, has_answer: bool = False) -> Turn:
    return Turn(AT, "user", f"a turn of {session}", session, has_answer)


def test_the_first_evidence_turn_and_the_first_answer_session_turn_rank_apart() -> None:
    other, plain, evidence = turn("s1"), turn("s2"), turn("s2", has_answer=True)
    late = turn("s3", has_answer=True)
    q = Question("q", "multi-session", "?", AT, [other, plain, evidence, late], frozenset({"s2", "s3"}))
    got = scores(q, [[other], [plain], [evidence]])
    assert got["MRR"] == 1 / 3  # the evidence turn is third
    assert got["session_MRR"] == 1 / 2  # a turn of an answer session is second
    assert got["R@5"] == 1 / 2  # one of the two evidence turns
    assert got["session_R@5"] == 1 / 2  # s2 of s2 and s3
    assert scores(q, [[other]] * 25)["session_MRR"] == 0.0  # none within 20
