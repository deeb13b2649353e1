"""The OpenAI-compatible chat proxy: recall, inject, forward, relay, then remember.

- `wire`: the OpenAI wire format bits the proxy reads or writes (errors, texts, SSE).
- `prepare`: which agent, the persona, and the memory block, before forwarding.
- `upstream`: the one HTTP client to the model server, and its failures as answers.
- `relay`: a streamed reply passed through chunk by chunk, its turn stored once.
- `forward`: one turn start to end (prepare, upstream, store), shared by the route and the web page.

The routes themselves are in `mnemo.server.routes.chat`.
"""
