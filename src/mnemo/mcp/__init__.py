"""mnemo as an MCP server: remember, recall, forget, list_memories and memory_history.

`server.build_server` defines the tools over Memory and Accounts; `stdio.serve` runs them for
the configured user (`mnemo mcp`), and `http.McpEndpoint` serves them at /mcp of
the HTTP server for the user whose API key comes with each request.
"""
