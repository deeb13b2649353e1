"""podman for the container tests: its settings for these machines, the base image, a build.
This module holds no tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONF = Path(__file__).with_name("containers.conf")
BASE = "localhost/mnemo-base:bookworm"  # scripts/container-base makes it from Debian's packages
SKIP_VARIABLE = "MNEMO_SKIP_CONTAINER_TESTS"


def environment() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONF)}


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    if shutil.which("podman") is None:
        raise AssertionError(f"podman is not installed (scripts/test installs it; {SKIP_VARIABLE}=1 skips)")
    done = subprocess.run(
        ["podman", *args], env=environment(), capture_output=True, text=True, timeout=timeout
    )
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def build(tag: str, tmp: Path) -> None:
    """The Dockerfile, on the Debian base image. pip inside the build trusts this machine's
    certificate authorities (a machine behind a TLS-inspecting proxy needs that)."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "container-base"), BASE], env=environment(), capture_output=True, text=True
    )
    assert done.returncode == 0, f"scripts/container-base failed:\n{done.stdout}\n{done.stderr}"
    pip_conf = tmp / "pip.conf"
    pip_conf.write_text("[global]\ncert = /etc/ssl/certs/host-ca.crt\n")
    podman(
        "build", "--format", "docker", "--build-arg", f"BASE={BASE}",
        "--volume", "/etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/host-ca.crt:ro",
        "--volume", f"{pip_conf}:/etc/pip.conf:ro",
        "--tag", tag, str(ROOT),
        timeout=1200,
    )  # fmt: skip
