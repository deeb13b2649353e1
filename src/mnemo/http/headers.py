"""Headers of mnemo's HTTP faces: the security headers every page is served with (the web
page, the API reference at /docs), and the request headers mnemo reads (the chat proxy, MCP)."""

from __future__ import annotations

# What every page may load and where its forms may go: only this server.
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self';"
        " form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


# mnemo's own request headers, as Starlette names them (lower case)
AGENT_HEADER = "x-mnemo-agent"  # an agent's id or name: act as that agent
CONVERSATION_HEADER = "x-mnemo-conversation"  # the conversation a proxied turn belongs to
AUTOMATION_HEADER = "x-mnemo-automation"  # true: an automated request, never learnt from
REMEMBER_HEADER = "x-mnemo-remember"  # off (or on): the person's switch for the conversation
