"""podman for the container tests: its settings for these machines, the base image, a build.
This module holds no tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "deploy" / "containers.conf"  # docs/install.md says when a host needs it
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


def build(tag: str, tmp: Path, marker: str) -> None:
    """The Dockerfile, on the Debian base image, as docs/install.md builds it behind a proxy that
    inspects TLS (these machines are behind one): this machine's certificate authorities and a
    pip.conf (holding `marker`) as build secrets; no stage image kept (--layers=false)."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "container-base"), BASE], env=environment(), capture_output=True, text=True
    )
    assert done.returncode == 0, f"scripts/container-base failed:\n{done.stdout}\n{done.stderr}"
    pip_conf = tmp / "pip.conf"
    pip_conf.write_text(f"# {marker}\n[global]\ndefault-timeout = 120\n")
    podman(
        "build", "--format", "docker", "--layers=false", "--build-arg", f"BASE={BASE}",
        "--secret", f"id=pip.conf,src={pip_conf}",
        "--secret", "id=ca.crt,src=/etc/ssl/certs/ca-certificates.crt",
        "--tag", tag, str(ROOT),
        timeout=1200,
    )  # fmt: skip


def dangling() -> set[str]:
    """The ids of the images no name points to (a build's stage left behind, for one)."""
    return set(podman("images", "--quiet", "--no-trunc", "--filter", "dangling=true").stdout.split())
