"""What every face served over HTTP shares (the API, the chat proxy, the web page, MCP at /mcp).

- `errors`: mnemo's errors as JSON answers, and the limit on request bodies.
- `responses`: those error answers, as the OpenAPI schema documents them.
- `timeouts`: deadlines for clients that send slowly.
- `client_address`: whose address a request comes from.
- `serving`: the options uvicorn runs the app with.
- `headers`: the security headers of every page, and mnemo's own request headers.
"""
