"""The batch services: work done over a whole store rather than for one request.

- `jobs`: the worker that learns from queued turns (`mnemo serve`, `mnemo worker`).
- `backfill`: learn from past conversations, or take back what that learnt (`mnemo backfill`).
- `reindex`: give every fact a vector of the configured embedding model (`mnemo reindex`).
- `export`: everything mnemo holds about a person, as JSON lines (`mnemo export`, the web page).
- `transfer`: files of conversations or facts, or an export, into a person's memory (`mnemo import`).
"""
