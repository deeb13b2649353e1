"""The chat proxy's stream relay: the `[DONE]` event waits until the turn is stored.

An OpenAI client stops reading at `data: [DONE]`, before the body ends; its
next request (the turn's state, the memories learnt) must find the turn stored.
"""

from __future__ import annotations

import itertools

import anyio
import pytest

from mnemo.proxy.relay import DoneHeld, StreamRelay

EVENTS = [
    b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}',
    b'data: {"choices":[{"index":0,"delta":{"content":"lo [DONE] data: [DONE]"}}]}',
    b"data: [DONE]",
]


def stream(end: bytes) -> bytes:
    return b"".join(event + end + end for event in EVENTS)


def relayed(chunks: list[bytes]) -> tuple[bytes, bytes]:
    """What a DoneHeld lets through while the chunks arrive, and what it keeps for the end."""
    held = DoneHeld()
    return b"".join(held.feed(c) for c in chunks), held.rest()


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_done_is_held_back_wherever_the_chunks_split(end: bytes) -> None:
    body = stream(end)
    done_at = body.index(b"data: [DONE]" + end)  # the event, not the content's own text
    for i, j in itertools.combinations(range(1, len(body)), 2):
        now, rest = relayed([body[:i], body[i:j], body[j:]])
        assert now + rest == body  # nothing lost, nothing reordered
        assert now == body[:done_at]  # every event before it goes out as it arrives; it waits


def test_a_stream_without_done_goes_out_whole_lines_at_a_time() -> None:
    body = b'{"choices": [\n{"message": {"content": "one piece"}}]}'  # stream ignored: one JSON body
    now, rest = relayed([body[:5], body[5:20], body[20:]])
    assert (now, rest) == (b'{"choices": [\n', b'{"message": {"content": "one piece"}}]}')


class Upstream:
    status_code = 200

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def aiter_raw(self):
        for chunk in self.chunks:
            yield chunk

    async def aclose(self) -> None:
        pass


async def test_the_turn_is_stored_before_done_reaches_the_client() -> None:
    log: list[object] = []

    async def finish(text: str) -> None:
        log.append(("stored", text))

    async def receive() -> dict:  # the client stays: nothing to read until the relay ends
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict) -> None:
        log.append(message.get("body", b"start"))

    body = stream(b"\n")
    relay = StreamRelay(Upstream([body[:10], body[10:]]), {}, finish)  # type: ignore[arg-type]
    await relay({"type": "http"}, receive, send)
    stored = log.index(("stored", "Hello [DONE] data: [DONE]"))
    sent = [m for m in log if isinstance(m, bytes)]
    assert b"".join(sent[1:]) == body
    carrying_done = next(i for i, m in enumerate(log) if isinstance(m, bytes) and b"data: [DONE]\n" in m)
    assert stored < carrying_done
