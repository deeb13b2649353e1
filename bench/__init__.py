"""Benchmarks (not part of the package): `.venv/bin/python bench/recall.py --help`."""
