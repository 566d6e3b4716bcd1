# syntax=docker/dockerfile:1
# The image runs exactly the release folder that scripts/release.sh makes (and test/release/
# tests): built JavaScript, config/, pipelines/ and production dependencies only.
#   docker build -t warehouse-ingest .      docker compose up   (compose.yaml)

FROM node:24-bookworm-slim AS build
# npm 11 honours package.json "allowScripts" and .npmrc strict-allow-scripts (npm 10 would run
# every dependency's install script); the runtime stage needs no npm at all.
RUN npm install -g npm@11.19.1
# better-sqlite3 (the embedded history) fetches a prebuilt addon for this Node line when it can
# and compiles its sources otherwise: the compiler is here for that case (the runtime stage has none).
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /build
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY config ./config
COPY pipelines ./pipelines
COPY fixtures/demo ./fixtures/demo
COPY src ./src
RUN bash scripts/release.sh /release

FROM node:24-bookworm-slim
# No HOST or PORT here: config/production.yaml listens on 0.0.0.0:3000, and a baked variable would
# override a mounted config file's http.port silently and refuse INGEST_HTTP__PORT ("both set").
ENV NODE_ENV=production \
    INGEST_ENV=production
WORKDIR /app
COPY --from=build /release/ ./
# Runs as the image's unprivileged `node` user; it owns only what it writes: /app/data (the spool,
# the lineage journal) and /drops (partners' local drops: their folders, processed/, failed/,
# receipts). A named volume mounted on a folder takes that folder's owner, so every mount path of
# compose.yaml is made here (test/ops/container.test.ts). The code and config stay root-owned.
RUN mkdir -p /app/data /drops && chown node:node /app/data /drops
USER node
VOLUME ["/app/data"]
EXPOSE 3000
# The admin listener's /healthz (plain HTTP even when http.tls is set; admin.host and admin.port
# read from the same configuration as serve): see docs/operations-startup.md#container. One check
# is a Node start that loads the configuration (~1 s of CPU, seconds of wall time on a busy 2-core
# host): hence every 30 s, and 10 s before a check counts as failed.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["node", "dist/cli.js", "healthcheck"]
# SIGTERM starts the graceful stop (shutdown.graceMs, 25 s by default): give it 30 s
# (docker stop -t 30, compose stop_grace_period).
STOPSIGNAL SIGTERM
# The same command as package.json's `start` (test/ops/start-command.test.ts keeps them equal):
# see docs/operations-startup.md for the flag.
CMD ["node", "--max-semi-space-size=32", "dist/cli.js", "serve"]
