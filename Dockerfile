# syntax=docker/dockerfile:1
# doi-proxy: a self-hosted DOI resolver. Runs on a supported Node LTS; the code also runs on Node 20.

# The one base image of every stage, pinned by digest so a rebuild gets the same bytes. To move to a
# newer Node 22 image, look its digest up and change this line (or let Renovate/Dependabot do it):
#   docker buildx imagetools inspect node:22-alpine     (the "Digest:" line, sha256:…)
# test/deploy.test.ts checks that every stage uses NODE_IMAGE and that it is pinned.
ARG NODE_IMAGE=node:22-alpine@sha256:8094c002d08262dba12645a3b4a15cd6cd627d30bc782f53229a2ec13ee22a00

# 1. Build: compile TypeScript with the dev dependencies. No install scripts: compiling TypeScript needs
# no native module (better-sqlite3's is built in the next stage, for the image).
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# 2. Production dependencies only. better-sqlite3 (the health history, HEALTH_DB) fetches its prebuilt
# binary for Alpine (musl) and, when none can be fetched, compiles SQLite with python3, make and g++:
# installed here only, so the runtime image has no compiler.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
RUN apk add --no-cache python3 make g++
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

# 3. Runtime: compiled code, production modules, sample config; runs as the unprivileged `node` user.
FROM ${NODE_IMAGE}
# WORKERS=0: one server process per CPU of the container's quota (cgroup cpu.max), else per core;
# with REDIS_URL they share one cache tier, without it each has its own.
# CACHE_FILE on the /data volume: the cache survives restarts and new containers.
# LOCAL_STORE_DIR empty: a production image serves no sample records (the samples for a trial:
# -e LOCAL_STORE_DIR=config/sample-records; your own: mount them and name the directory).
# HEALTH_DB on the /data volume too: the health checks' history (used only with HEALTH_WATCH or HEALTH_LIST_FILE).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8000 \
    WORKERS=0 \
    CACHE_FILE=/data/cache.snapshot \
    HEALTH_DB=/data/health.sqlite \
    LOCAL_STORE_DIR=
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node package.json ./
COPY --chown=node:node --chmod=755 bin ./bin
COPY --chown=node:node config ./config
# /data: the cache snapshot, the health history (and, if you like, your local records: LOCAL_STORE_DIR=/data/records).
# The `doi-proxy` command (package.json "bin") on PATH: `docker run … IMAGE doi-proxy check docs/`.
RUN mkdir -p /data && chown node:node /data && ln -s /app/bin/doi-proxy.js /usr/local/bin/doi-proxy
VOLUME ["/data"]
USER node
EXPOSE 8000
# No curl in the image: Node itself asks /healthz.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node itself, not `npm start`: nothing between the container's signals and the server, and no build step
# (npm start builds dist/ when src/ is newer, with dev dependencies this image does not have).
CMD ["node", "dist/main.js"]
