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
