"""A content-based extractor for the scripted server: the latest user message is the fact.

For backfill tests, where many turns are learnt in an order the test does not
script one reply at a time: ScriptedOpenAI.responder answers each extraction
request with the last user message of its window as a fact (from that message),
and each reconciliation with "add" for every new fact. It counts the extraction
requests per user message, and can fail (HTTP 500: the model is unavailable) or
block on chosen messages.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from typing import Any

from tests.helpers import extraction

_USER_LINE = re.compile(r"^\[(\d+)\] User: (.*)$", re.MULTILINE)
_NEW_FACT = re.compile(r"^N(\d+)\. ", re.MULTILINE)


class Learner:
    def __init__(self) -> None:
        self.extracted: Counter[str] = Counter()  # extraction requests per (last) user message
        self.fail_on: set[str] = set()  # user messages the model answers 500 for
        self.block_on: set[str] = set()  # user messages whose request waits for `release`
        self.blocked = threading.Event()  # set when a request is waiting
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str | None:
        kind = json.dumps(body.get("response_format"))
        prompt = body["messages"][-1]["content"]
        if "reconciliation" in kind:
            new = [int(n) for n in _NEW_FACT.findall(prompt)]
            return json.dumps({"decisions": [{"new": n, "action": "add", "target": None} for n in new]})
        said = _USER_LINE.findall(prompt)
        if not said:
            return json.dumps({"facts": []})
        number, text = said[-1]
        if text in self.fail_on:
            return None  # the server answers 500 "no scripted reply"
        with self._lock:
            self.extracted[text] += 1
        if text in self.block_on:
            self.blocked.set()
            self.release.wait(60)
        fact = {"text": text, "confidence": 0.95, "speaker": "user", "message": int(number)}
        return json.dumps(extraction(fact))
