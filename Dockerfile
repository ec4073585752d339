# The server image (same as images/server/Dockerfile), buildable from the repository root:
#   docker build -t potato-server .
#   docker run -p 8000:8000 -v "$PWD/project:/project" --user "$(id -u):$(id -g)" potato-server
# BASE_IMAGE: any Debian-based Python >= 3.8 with venv (CI builds on a local Debian 12 base).
ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN python3 -m venv /opt/potato \
 && /opt/potato/bin/pip install --no-cache-dir --disable-pip-version-check --upgrade "pip>=24" \
 && /opt/potato/bin/pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
 && /opt/potato/bin/pip install --no-cache-dir /wheels/*.whl "gunicorn>=22" \
 && find /opt/potato -name __pycache__ -prune -exec rm -rf {} +

FROM ${BASE_IMAGE}
ARG VERSION=2.14.0
ARG SOURCE=unknown
ARG REVISION=unknown
LABEL org.opencontainers.image.title="potato-server" \
      org.opencontainers.image.description="Potato annotation server (trains wherever the GPUs are)" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="MIT"
COPY --from=build /opt/potato /opt/potato
RUN useradd --uid 10001 --home-dir /home/potato --create-home --shell /usr/sbin/nologin potato
# POTATO_PORT: the port inside (the healthcheck asks the same one); -e POTATO_PORT=9000 to change it
ENV PATH=/opt/potato/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 POTATO_PORT=8000
USER 10001
WORKDIR /project
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python3", "-c", "import os, sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ['POTATO_PORT'], timeout=4).status == 200 else 1)"]
ENTRYPOINT ["potato", "start", "--host", "0.0.0.0"]
CMD ["/project/config.yaml"]
