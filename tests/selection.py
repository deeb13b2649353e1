"""Which tests run: `--backend=sqlite|postgres|citus|both|all`, and the quick run `-m "not slow"`.

tests/conftest.py imports these hooks. A test that depends on a backend runs only
when that backend is chosen (default `both`: SQLite and PostgreSQL; `all` adds
Citus, `citus` is Citus alone):

- a test using the `backend` fixture is parametrised over the chosen backends;
- one marked `@pytest.mark.backend(name, …)` with several names (say `"postgres",
  "citus"`: any PostgreSQL) and using the `backend` fixture is parametrised over
  those, and runs on each that is chosen;
- one marked `@pytest.mark.backend(name)`, parametrised over `backend` itself, or
  using the `postgres` fixture is deselected when its backend is not chosen.

With `--backend=sqlite` nothing starts PostgreSQL. A test parametrised on `citus` is
marked `citus` (so `-m "not citus"` leaves it out too). Tests that depend on no backend
always run.

Every test under SLOW_DIRS is marked slow (the collection checks it): with exactly
`-m "not slow"`, those directories are not even imported, which saves seconds of
every quick run.

A test that uses the Citus cluster (the `citus` fixture) is marked `citus`, so that
`-m "not citus"` leaves out every one of them (the collection checks this too).
"""

from __future__ import annotations

from pathlib import Path

import pytest

BACKENDS = ("sqlite", "postgres", "citus")
# the mark of a test about PostgreSQL alone, that runs on one server and on a Citus cluster alike
ANY_POSTGRESQL = pytest.mark.backend("postgres", "citus")
# what each --backend value chooses
CHOICES = {**{b: (b,) for b in BACKENDS}, "both": ("sqlite", "postgres"), "all": BACKENDS}
TESTS = Path(__file__).parent
# a real server, a browser, or processes in every test
SLOW_DIRS = tuple(TESTS / name for name in ("server", "web", "mcp", "recipes"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=list(CHOICES),
        default="both",
        help="run the backend-dependent tests on SQLite, on PostgreSQL, on a Citus cluster, on both"
        " SQLite and PostgreSQL (default) or on all three",
    )


def chosen_backends(config: pytest.Config) -> tuple[str, ...]:
    return CHOICES[config.getoption("backend")]


def _quick(config: pytest.Config) -> bool:
    return " ".join(config.getoption("markexpr").split()) == "not slow"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return True if _quick(config) and collection_path in SLOW_DIRS else None


def _parametrizes_backend(definition: pytest.Function) -> bool:
    for mark in definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs["argnames"]
        if "backend" in ([n.strip() for n in names.split(",")] if isinstance(names, str) else names):
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test using the `backend` fixture runs once on each chosen backend, or on each backend
    its `backend` mark names when it names several, unless its own parametrisation or a mark
    naming one backend fixes it (those not chosen are deselected below)."""
    definition = metafunc.definition
    if "backend" not in metafunc.fixturenames or _parametrizes_backend(definition):
        return
    mark = definition.get_closest_marker("backend")
    if mark is None:
        metafunc.parametrize("backend", chosen_backends(metafunc.config), indirect=True)
    elif len(mark.args) > 1:
        metafunc.parametrize("backend", mark.args, indirect=True)


def _needed_backends(item: pytest.Item) -> set[str]:
    needed = set()
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "backend" in callspec.params:  # it overrides a `backend` mark
        needed.add(callspec.params["backend"])
    elif (mark := item.get_closest_marker("backend")) is not None:
        needed.update(mark.args)
    if "postgres" in getattr(item, "fixturenames", ()):
        needed.add("postgres")
    return needed


def _refuse(config: pytest.Config, items: list[pytest.Item], message: str) -> None:
    """Stop the run before any test with `message`: a usage error, or, in a pytest-xdist worker
    (whose usage error the controller never shows), a collection error that the controller
    reports, with no test left to run."""
    if not hasattr(config, "workerinput"):
        raise pytest.UsageError(message)
    report = pytest.CollectReport("tests/selection.py", "failed", message, [])
    config.hook.pytest_collectreport(report=report)
    items.clear()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests that need a backend not chosen; refuse a quick test in SLOW_DIRS and a
    test on the Citus cluster not marked `citus`."""
    quick_in_slow_dir = [
        item.nodeid
        for item in items
        if item.get_closest_marker("slow") is None and any(d in item.path.parents for d in SLOW_DIRS)
    ]
    if quick_in_slow_dir:
        return _refuse(
            config,
            items,
            "not marked slow, but in a directory that -m 'not slow' does not collect"
            f" (tests/selection.py): {', '.join(quick_in_slow_dir)}",
        )
    unmarked_citus = [
        item.nodeid
        for item in items
        if "citus" in getattr(item, "fixturenames", ()) and item.get_closest_marker("citus") is None
    ]
    if unmarked_citus:
        return _refuse(
            config, items, f"uses the Citus cluster but is not marked citus: {', '.join(unmarked_citus)}"
        )
    chosen = set(chosen_backends(config))
    kept, left = [], []
    for item in items:
        needed = _needed_backends(item)
        (left if needed - chosen else kept).append(item)
        if "citus" in needed:
            item.add_marker(pytest.mark.citus)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
