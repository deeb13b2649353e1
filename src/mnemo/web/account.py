"""Settings: the memory switch, the review policy, the sensitive-data gate, agents and API keys."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .. import keys
from ..domain import GateAction, InvalidInput, MemoryMode, NameTaken, NotFound, ReviewPolicy, Sensitive
from ..gate import memory_enabled
from .forms import fact_id, flag, text
from .render import page, redirect
from .routing import web_router
from .session import FormDep, Session, SessionDep, accounts_of, memory_of, sign_out

router = web_router()


async def render_settings(request: Request, session: Session, *, status: int = 200, **extra: Any) -> Response:
    accounts = accounts_of(request)
    user = session.user  # read by this very request's sign-in check: current
    mode = await accounts.server_mode()
    signed_with = keys.parse(session.key)
    context: dict[str, Any] = {
        "agent_form": {"name": "", "private": "", "reads_default": ""},
        "agent_error": "",
        "key_error": "",
        "new_key": None,
    }
    context.update(extra)
    return page(
        request,
        "settings.html",
        status=status,
        section="settings",
        user=user,
        mode=mode or MemoryMode.ENABLED_DEFAULT_ON,
        mode_set=mode is not None,
        enabled=memory_enabled(mode, user.memory_enabled),
        overridden=mode == MemoryMode.DISABLED and user.memory_enabled is True,
        policies=list(ReviewPolicy),
        gate=user.gate.actions(),
        gate_actions=list(GateAction),
        recall_days=memory_of(request).settings.recall_log_days,
        usage=await accounts.usage(user.id),
        agents=await accounts.agents(user.id),
        keys=await accounts.api_keys(user.id),
        current_key=signed_with[0] if signed_with else None,
        **context,
    )


@router.get("/settings")
async def settings(request: Request, session: SessionDep) -> Response:
    return await render_settings(request, session)


@router.post("/settings/memory")
async def switch(request: Request, session: SessionDep, form: FormDep) -> Response:
    choice = text(form, "memory", 10)
    value = {"on": True, "off": False, "default": None}
    if choice not in value:
        return redirect("/settings", "Choose on, off, or the server's default.", kind="error")
    accounts = accounts_of(request)
    await accounts.set_user_switch(session.user.id, value[choice])
    now_on = await accounts.memory_enabled(session.user.id)
    said = (
        "Memory is now on for you." if now_on else "Memory is now off for you: nothing is recalled or learnt."
    )
    if value[choice] is True and not now_on:
        said = "Your switch is on, but the server's mode keeps memory off for everyone."
        return redirect("/settings", said, kind="warn")
    return redirect("/settings", said)


@router.post("/settings/recalls")
async def recalls(request: Request, session: SessionDep, form: FormDep) -> Response:
    choice = text(form, "recalls", 10)
    if choice not in ("on", "off"):
        return redirect("/settings", "Choose on or off for the recall log.", kind="error")
    await accounts_of(request).set_record_recalls(session.user.id, choice == "on")
    said = (
        "Recalls are recorded." if choice == "on" else "Recalls are no longer recorded; what was is deleted."
    )
    return redirect("/settings", said)


@router.post("/settings/policy")
async def policy(request: Request, session: SessionDep, form: FormDep) -> Response:
    try:
        chosen = ReviewPolicy(text(form, "policy", 20))
    except ValueError:
        return redirect("/settings", "Choose one of the review policies.", kind="error")
    await accounts_of(request).set_review_policy(session.user.id, chosen)
    return redirect("/settings", f"Review policy: {chosen}.")


@router.post("/settings/gate")
async def gate(request: Request, session: SessionDep, form: FormDep) -> Response:
    changes = {str(kind): text(form, f"gate-{kind}", 20) for kind in Sensitive if f"gate-{kind}" in form}
    if not changes:
        return redirect("/settings", "Choose an action for each kind of sensitive data.", kind="error")
    try:
        await accounts_of(request).set_gate(session.user.id, changes)
    except InvalidInput as exc:
        return redirect("/settings", str(exc), kind="error")
    return redirect("/settings", "Sensitive-data gate saved.")


@router.post("/settings/agents")
async def create_agent(request: Request, session: SessionDep, form: FormDep) -> Response:
    typed = {
        "name": text(form, "name", 101),
        "private": "on" if flag(form, "private") else "",
        "reads_default": "on" if flag(form, "reads_default") else "",
    }
    problem = ""
    if not typed["name"]:
        problem = "Give the agent a name."
    elif len(typed["name"]) > 100:
        problem = "A name is at most 100 characters."
    if not problem:
        try:
            agent = await accounts_of(request).create_agent(
                session.user.id,
                typed["name"],
                private=bool(typed["private"]),
                reads_default=bool(typed["reads_default"]),
            )
        except (InvalidInput, NameTaken) as exc:
            problem = str(exc)
        else:
            return redirect("/settings", f"Agent “{agent.name}” created.")
    return await render_settings(request, session, status=422, agent_form=typed, agent_error=problem)


@router.post("/settings/agents/{agent}/delete")
async def delete_agent(request: Request, session: SessionDep, form: FormDep, agent: str) -> Response:
    deleted, retracted = await memory_of(request).delete_agent(session.user.id, fact_id(agent, "agent"))
    return redirect(
        "/settings", f"Agent “{deleted.name}” deleted; {retracted} of its memories retracted (not erased)."
    )


@router.post("/settings/keys")
async def create_key(request: Request, session: SessionDep, form: FormDep) -> Response:
    name = text(form, "name", 101) or "web"
    if len(name) > 100:
        return await render_settings(
            request, session, status=422, key_error="A name is at most 100 characters."
        )
    try:
        key, token = await accounts_of(request).create_api_key(session.user.id, name)
    except InvalidInput as exc:
        return await render_settings(request, session, status=422, key_error=str(exc))
    return await render_settings(request, session, new_key={"key": key, "token": token})


@router.post("/settings/keys/{key}/revoke")
async def revoke_key(request: Request, session: SessionDep, form: FormDep, key: str) -> Response:
    if not keys.is_key_id(key):
        raise NotFound(f"no API key {key[:40]!r}")
    revoked = await accounts_of(request).revoke_api_key(session.user.id, key)
    signed_with = keys.parse(session.key)
    if signed_with and signed_with[0] == revoked.id:
        response = redirect("/signin", "You revoked the key you were signed in with, so you are signed out.")
        sign_out(response, request)
        return response
    return redirect("/settings", f"Key “{revoked.name}” revoked: it stops working at once.")
