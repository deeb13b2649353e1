"""One person's queue of turns is bounded: past the limit a turn is refused with 429 and
Retry-After, nothing stored, over the API and the chat proxy; other people are not held back."""

from __future__ import annotations

import openai
import pytest

from mnemo.settings import JobSettings
from tests.server.api import ok, submit

pytestmark = pytest.mark.slow  # each test runs a real server

LIMIT = 2


@pytest.fixture
def server_settings(server_settings):
    # no worker: the turns stay queued, so the limit is reached and stays reached
    jobs = JobSettings(lease_seconds=5, poll_seconds=0.05, max_queued_per_user=LIMIT)
    return server_settings.model_copy(update={"jobs": jobs, "worker": False})


def test_a_turn_past_the_queue_limit_is_refused_with_retry_after_and_nothing_stored(client, other):
    for i in range(LIMIT):
        assert submit(client, f"My locker {i} is blue")["queued"] is True
    refused = client.post(
        "/v1/turns",
        json={"conversation_id": "c9", "messages": [{"role": "user", "content": "My locker 9 is green"}]},
    )
    assert refused.status_code == 429, refused.text
    assert refused.headers["Retry-After"] == "30"
    assert "2 of your turns are waiting to be learnt from" in refused.json()["error"]["message"]
    assert len(ok(client.get("/v1/turns"))["items"]) == LIMIT  # the refused turn is not among them
    # another person's turn is taken as ever
    assert submit(other, "My shelf is red")["queued"] is True


@pytest.mark.parametrize("stream", [False, True])
def test_the_proxy_refuses_a_turn_past_the_limit_before_asking_the_model(
    server, client, scripted_llm, stream
):
    for i in range(LIMIT):
        submit(client, f"My locker {i} is blue")
    chat = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key=server.token, max_retries=0)
    with pytest.raises(openai.RateLimitError, match="too many of your turns are waiting") as caught:
        chat.chat.completions.create(
            model="scripted-model",
            messages=[{"role": "user", "content": "My locker 9 is green"}],
            stream=stream,
        )
    assert caught.value.response.headers["Retry-After"] == "30"
    assert caught.value.code == "learning_queue_full"
    assert not [r for r in scripted_llm.chat_requests() if "locker 9" in str(r)]
    assert len(ok(client.get("/v1/turns"))["items"]) == LIMIT
