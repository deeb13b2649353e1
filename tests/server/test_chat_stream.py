"""A client that leaves in the middle of a streamed reply: its turn is still stored, once."""

from __future__ import annotations

import time

import pytest

from tests.fakes.live_server import LiveServer
from tests.helpers import extraction
from tests.server.test_chat_support import DripUpstream, StoreView, chat_client, wait_until

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)


@pytest.mark.citus_ci
def test_a_client_leaving_mid_stream_still_has_its_turn_stored_once(server_settings, embedder, scripted_llm):
    drip = DripUpstream(first="The first half, ", rest="and the second half.")
    scripted_llm.reply_json(extraction())  # the extractor is still the scripted server
    settings = server_settings.model_copy(update={"upstream_base_url": drip.base_url})
    try:
        with LiveServer(settings) as live, chat_client(live) as client:
            view = StoreView(settings, embedder)
            try:
                stream = client.chat.completions.create(
                    model="any", messages=[{"role": "user", "content": "Tell me a long story"}], stream=True
                )
                first = next(iter(stream))
                assert first.choices[0].delta.content == "The first half, "
                stream.close()  # the client goes away; the upstream is still holding the rest

                (job,) = view.settled_jobs(1)
                messages = [(m.role, m.content) for m in view.messages(job)]
                assert messages == [("user", "Tell me a long story"), ("assistant", "The first half, ")]

                drip.release()  # the upstream finishing now must not store the turn again
                wait_until(drip.finished.is_set, 5, "the upstream to finish")
                time.sleep(0.3)
                assert len(view.jobs()) == 1
            finally:
                view.close()
    finally:
        drip.close()


def test_a_conversation_erased_while_a_reply_streams_does_not_come_back_with_its_turn(
    server_settings, embedder, scripted_llm
):
    """The person erases the conversation, then everything, while a streamed reply is on its way
    (the official client has read its first chunk): when the stream ends, its turn is not stored,
    and neither the conversation nor anything said in it comes back."""
    import httpx2

    drip = DripUpstream(first="Noted: ", rest="Reykjavik on May 3.")
    scripted_llm.reply_json(extraction())
    settings = server_settings.model_copy(update={"upstream_base_url": drip.base_url})
    try:
        with LiveServer(settings) as live, chat_client(live) as client:
            api = httpx2.Client(
                base_url=live.base_url, headers={"Authorization": f"Bearer {live.token}"}, timeout=30
            )
            view = StoreView(settings, embedder)
            try:
                said = {"role": "user", "content": "I fly to Oslo on May 3"}
                turn = {"conversation_id": "trip", "messages": [said]}
                assert api.post("/v1/turns", json=turn).status_code == 202

                for erasure, conversation in (
                    ({"conversation_id": "trip"}, "trip"),
                    ({"everything": True, "confirm": "erase everything"}, "another-trip"),
                ):
                    drip.released.clear()
                    drip.finished.clear()
                    ask = {"role": "user", "content": "Book me a flight to Reykjavik"}
                    raw = client.chat.completions.with_raw_response.create(
                        model="any",
                        messages=[ask],
                        stream=True,
                        extra_headers={"X-Mnemo-Conversation": conversation},
                    )
                    turn_id = raw.headers["x-mnemo-turn"]
                    stream = raw.parse()
                    chunks = iter(stream)
                    assert next(chunks).choices[0].delta.content == "Noted: "
                    assert api.post("/v1/erasures", json=erasure).status_code == 201
                    drip.release()
                    rest = "".join(c.choices[0].delta.content or "" for c in chunks)
                    assert rest == "Reykjavik on May 3."  # the reply still reaches the client whole

                    assert api.get(f"/v1/turns/{turn_id}").status_code == 404
                    assert api.get("/v1/erasures/about", params={"q": "Reykjavik"}).json() == {
                        "memories": [],
                        "messages": [],
                    }
                    assert not [j for j in view.jobs() if j.conversation_id == conversation]
                    preview = api.post("/v1/erasures/preview", json={"conversation_id": conversation})
                    assert preview.status_code == 404  # no such conversation: it did not come back
            finally:
                view.close()
                api.close()
    finally:
        drip.close()
