"""False positives of the sensitive-data gate: its detector over two conversation sets.

    .venv/bin/python bench/sensitive.py [--quick] [--json] [--show N]

Neither LoCoMo (shared/data/locomo-dev.json) nor LongMemEval_S
(shared/data/longmemeval-s-dev.json.gz) holds a real secret, card, bank account,
government id, phone number or email address, so every finding over their messages is a
false positive (the data is read by path; nothing of it is copied into this repository).
Each distinct message is scanned once (LongMemEval's haystacks repeat sessions). Prints
messages scanned, findings per category, and the rate: the share of messages with a finding
of that category. `--quick` reads LoCoMo only; `--show N` prints up to N findings of each
category with a little context, to see what was taken.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from mnemo.domain import Sensitive
from mnemo.sensitive import find

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LOCOMO = DATA / "locomo-dev.json"
LONGMEMEVAL = DATA / "longmemeval-s-dev.json.gz"


def locomo_messages(path: Path) -> Iterator[str]:
    for sample in json.loads(path.read_text()):
        conversation = sample["conversation"]
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    yield turn.get("text", "")


def longmemeval_messages(path: Path) -> Iterator[str]:
    with gzip.open(path, "rt") as f:
        for item in json.load(f):
            for session in item["haystack_sessions"]:
                for turn in session:
                    yield turn.get("content", "")


def scan(sources: dict[str, Iterator[str]], show: int) -> dict:
    seen: set[str] = set()
    messages = 0
    any_flagged = 0
    chars = 0
    flagged: Counter[str] = Counter()  # messages with a finding of that category
    findings: Counter[str] = Counter()
    examples: dict[str, list[str]] = {str(k): [] for k in Sensitive}
    per_source = {}
    for name, texts in sources.items():
        before = messages
        for text in texts:
            if not text or text in seen:
                continue
            seen.add(text)
            messages += 1
            chars += len(text)
            found = find(text)
            for f in found:
                findings[f.kind] += 1
                if len(examples[f.kind]) < show:
                    examples[f.kind].append(text[max(0, f.start - 30) : f.end + 30].replace("\n", " "))
            any_flagged += bool(found)
            for kind in {f.kind for f in found}:
                flagged[kind] += 1
        per_source[name] = messages - before
    return {
        "messages": messages,
        "chars": chars,
        "per_source": per_source,
        "findings": {str(k): findings[k] for k in Sensitive},
        "messages_flagged": {str(k): flagged[k] for k in Sensitive},
        "rate": {str(k): flagged[k] / messages if messages else 0.0 for k in Sensitive},
        "any_rate": any_flagged / messages if messages else 0.0,
        "examples": {k: v for k, v in examples.items() if v},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="LoCoMo only")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--show", type=int, default=0, help="print up to N findings of each category")
    args = parser.parse_args()
    sources: dict[str, Iterator[str]] = {}
    if LOCOMO.is_file():
        sources["locomo"] = locomo_messages(LOCOMO)
    if LONGMEMEVAL.is_file() and not args.quick:
        sources["longmemeval"] = longmemeval_messages(LONGMEMEVAL)
    if not sources:
        parser.error(f"no data under {DATA}")
    t = time.perf_counter()
    out = scan(sources, args.show)
    out["wall_s"] = round(time.perf_counter() - t, 1)
    print(f"messages scanned: {out['messages']} ({out['per_source']}), {out['wall_s']} s", file=sys.stderr)
    for kind in Sensitive:
        k = str(kind)
        print(
            f"{k:14} findings {out['findings'][k]:5}  messages {out['messages_flagged'][k]:5}"
            f"  rate {out['rate'][k]:.5%}",
            file=sys.stderr,
        )
        for example in out["examples"].get(k, []):
            print(f"    … {example} …", file=sys.stderr)
    print(f"any category   rate {out['any_rate']:.5%}", file=sys.stderr)
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
