# syntax=docker/dockerfile:1
# doi-proxy: a self-hosted DOI resolver. Runs on a supported Node LTS; the code also runs on Node 20.

# 1. Build: compile TypeScript with the dev dependencies.
FROM node:22-alpine AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# 2. Production dependencies only, without the build tools.
FROM node:22-alpine AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

# 3. Runtime: compiled code, production modules, sample config; runs as the unprivileged `node` user.
FROM node:22-alpine
# WORKERS=0: one server process per core (each with its own cache).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8000 \
    WORKERS=0
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node package.json ./
COPY --chown=node:node config ./config
USER node
EXPOSE 8000
# No curl in the image: Node itself asks /healthz.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node, not npm: npm would swallow SIGTERM and the graceful shutdown with it.
CMD ["node", "dist/main.js"]
