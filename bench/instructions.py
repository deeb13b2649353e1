"""How often the instruction detector flags ordinary conversation: every turn of LoCoMo.

    .venv/bin/python bench/instructions.py [--data PATH] [--show]

LoCoMo's turns are two people talking about their lives, none of them addressed to an
assistant, so every turn the detector (mnemo.write.instructions) flags is a false
positive. The data is read by path (default: shared/data/locomo-dev.json; licence
CC BY-NC 4.0, nothing of it is copied into this repository). --show prints the
flagged turns.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

from mnemo.write.instructions import reads_as_instruction

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"


def turns(data: list[dict]) -> Iterator[str]:
    for sample in data:
        conversation = sample["conversation"]
        for key, session in conversation.items():
            if key.startswith("session_") and isinstance(session, list):
                for turn in session:
                    yield turn["text"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo-format JSON file")
    parser.add_argument("--show", action="store_true", help="print the flagged turns")
    args = parser.parse_args()
    said = list(turns(json.loads(args.data.read_text())))
    flagged = [t for t in said if reads_as_instruction(t)]
    print(f"{len(flagged)} of {len(said)} turns read as an instruction to an assistant")
    if args.show:
        for text in flagged:
            print(f"  {text}")


if __name__ == "__main__":
    main()
