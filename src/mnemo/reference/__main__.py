"""`python -m mnemo.reference [--check] [DIRECTORY]`: what scripts/reference runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import REFRESH, stale, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=REFRESH, description="Write the reference pages made from the code."
    )
    parser.add_argument(
        "directory", nargs="?", type=Path, default=Path("docs/reference"), help="default: docs/reference"
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is stale")
    args = parser.parse_args(argv)
    if args.check:
        for path in (found := stale(args.directory)):
            print(f"{path} is {'stale' if path.is_file() else 'missing'}", file=sys.stderr)
        if found:
            print(f"Refresh the reference pages with: {REFRESH}", file=sys.stderr)
        return 1 if found else 0
    for path in write(args.directory):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
