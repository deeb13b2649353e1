"""The class of every web page's route: what a person sees when something is off.

The API answers JSON errors (http/errors.py); a page answers a page: to the
sign-in form when no one is signed in, a "not found" page for ids that are not
theirs, a refusal page for a form that failed its checks or that no page sends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..domain import Conflict, InvalidInput, NotFound, StorageFull
from ..http.headers import HEADERS
from .render import page
from .session import BadForm, Refused, SignInNeeded

log = logging.getLogger(__name__)


def error_page(request: Request, status: int, title: str, message: str) -> Response:
    return page(request, "error.html", status=status, title=title, message=message)


class WebRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInNeeded:
                target = "/signin"
                if request.method == "GET" and request.url.path != "/":
                    where = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                    target += "?next=" + quote(where, safe="")
                return RedirectResponse(target, status_code=303, headers=HEADERS)
            except Refused as exc:
                return error_page(request, 403, "Refused", f"Nothing was changed: {exc}.")
            except BadForm as exc:
                return error_page(request, 400, "Form not accepted", f"Nothing was changed: {exc}")
            except NotFound:
                return error_page(
                    request, 404, "Not found", "There is nothing here, or it is not yours to see."
                )
            except Conflict as exc:
                return error_page(request, 409, "Changed meanwhile", f"{exc}. Reload the page and try again.")
            except InvalidInput as exc:
                return error_page(request, 400, "Cannot do that", str(exc))
            except StorageFull as exc:
                message = f"Nothing was changed: {exc}. Free some disk space and try again."
                return error_page(request, 507, "Storage is full", message)
            except Exception:  # a bug: the log has the traceback, the person a plain page
                log.exception("the page %s %s failed", request.method, request.url.path)
                message = "Something went wrong on the server. Reload the page to see where things stand."
                return error_page(request, 500, "Server error", message)

        return guarded


def web_router() -> APIRouter:
    """A router of pages: kept out of the OpenAPI schema, which documents the API only."""
    return APIRouter(route_class=WebRoute, include_in_schema=False)
