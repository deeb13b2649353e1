"""The API reference at /docs: Swagger UI, served by this server under the site's Content-Security-Policy.

Swagger UI's files come unchanged from swagger-ui-dist, as the fastapi-swagger package ships them, so
the page loads nothing from elsewhere. FastAPI's own page configures Swagger UI in an inline script,
which the policy refuses; here that configuration is a served file, docs.js. ReDoc is not offered:
it needs inline styles and would be a second reference to the same schema.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

import fastapi_swagger
from fastapi import FastAPI, HTTPException
from starlette.responses import FileResponse, HTMLResponse

from ..http.headers import HEADERS

SWAGGER_UI = Path(fastapi_swagger.__file__).with_name("resources")
ASSETS = {
    "swagger-ui-bundle.js": SWAGGER_UI / "swagger-ui-bundle.js",
    "swagger-ui.css": SWAGGER_UI / "swagger-ui.css",
    "favicon-32x32.png": SWAGGER_UI / "favicon-32x32.png",
    "docs.js": Path(__file__).with_name("docs.js"),
}
# The files change only when the package does: browsers may keep them for an hour.
ASSET_HEADERS = {**HEADERS, "Cache-Control": "max-age=3600"}

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui" data-openapi-url="{openapi_url}"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/docs.js"></script>
</body>
</html>
"""


def install(app: FastAPI) -> None:
    """/docs and its files; the app must be built with docs_url=None and redoc_url=None."""
    page = PAGE.format(title=escape(app.title), openapi_url=escape(app.openapi_url or ""))

    @app.get("/docs", include_in_schema=False)
    async def reference() -> HTMLResponse:
        return HTMLResponse(page, headers=HEADERS)

    @app.get("/docs/{name}", include_in_schema=False)
    async def asset(name: str) -> FileResponse:
        path = ASSETS.get(name)
        if path is None:
            raise HTTPException(404, "not found")
        return FileResponse(path, headers=ASSET_HEADERS)
