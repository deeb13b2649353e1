"""docs/reference/ says what the code says (issue 33): each page is what mnemo.reference renders
now, so a change to a command, a setting, a route or a metric fails here until the pages are
written again with scripts/reference."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from mnemo import reference
from mnemo.reference import __main__ as script
from mnemo.reference import cli, settings

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reference"


@pytest.mark.parametrize("name", list(reference.PAGES))
def test_each_page_is_what_the_code_renders(name):
    path = DOCS / name
    written = path.read_text(encoding="utf-8") if path.is_file() else None
    state = "missing" if written is None else "stale"
    assert written == reference.page(name), (
        f"docs/reference/{name} is {state}: run {reference.REFRESH} to write it again from the code"
    )


def test_the_check_names_each_stale_page_and_how_to_refresh(tmp_path, capsys, monkeypatch):
    pages = {name: f"{reference.HEADER}\n\n# {name}\n" for name in reference.PAGES}
    monkeypatch.setattr(reference, "page", pages.__getitem__)  # the real pages are checked above
    for name, text in pages.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert script.main(["--check", str(tmp_path)]) == 0
    (tmp_path / "settings.md").write_text("edited by hand", encoding="utf-8")
    (tmp_path / "metrics.md").unlink()
    assert script.main(["--check", str(tmp_path)]) == 1
    said = capsys.readouterr().err
    assert f"{tmp_path / 'settings.md'} is stale" in said
    assert f"{tmp_path / 'metrics.md'} is missing" in said
    assert f"{tmp_path / 'cli.md'}" not in said
    assert reference.REFRESH in said
    assert script.main([str(tmp_path)]) == 0
    assert reference.stale(tmp_path) == []


class Part(BaseModel):
    """What the part is for."""

    size: int = Field(default=3, ge=1)  # how big
    client_secret: str = "in-the-part"


class Example(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EX_", env_nested_delimiter="__")

    # reached at
    api_key: str = "sk-do-not-print"
    password: str | None = None
    mode: str = "fast"
    part: Part = Field(default_factory=Part)


def test_settings_show_variables_comments_and_never_a_secret():
    page = settings.render(Example, floors={"other-model": {"part": {"size": 5}}})
    assert "sk-do-not-print" not in page and "in-the-part" not in page
    assert "| `EX_API_KEY` | `str` | unset | Reached at |" in page
    assert "| `EX_PASSWORD` | `str` | unset |  |" in page
    assert "| `EX_PART__SIZE` | `int`, x>=1 | `3` (`other-model`: `5`) | How big |" in page
    assert "| `EX_PART__CLIENT_SECRET` | `str` | unset |  |" in page
    assert "## `[part]`\n\nWhat the part is for." in page


def test_hidden_commands_and_options_stay_out():
    app = typer.Typer(name="tool", help="A tool.")

    @app.command(help="Shown.")
    def shown(secret: str = typer.Option("", hidden=True), size: int = typer.Option(2, min=1)) -> None:
        """Shown."""

    @app.command(hidden=True)
    def internal() -> None:
        """Not for people."""

    page = cli.render(app)
    assert "tool shown" in page and "| `--size` | `int`, x>=1 | `2` |  |" in page
    assert "internal" not in page and "--secret" not in page
