# syntax=docker/dockerfile:1
# Multi-stage build: dependencies are installed from the lockfile and the gateway bundled
# (`npm run build`: esbuild, src/ and machines/ into dist/server.js, src/dashboard/ into
# dist/dashboard/) in a build stage; the runtime
# stage runs the bundle as the unprivileged `node` user, as `npm start` does after its build.
# (No Docker engine runs on our development machines; this file is kept correct by review.)

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only (esbuild, which builds the bundle, is one of them).
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY machines ./machines
COPY scripts/build-gateway.mjs scripts/build-dashboard.mjs ./scripts/
RUN npm run build

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    METRICS_LISTEN=0.0.0.0:9464 \
    DATA_DIR=/data
WORKDIR /app
# The speech engines: ffmpeg (probe, decode), pocketsphinx with its English model (stt-local),
# irstlm (its language models for a conversation), espeak-ng and festival with its US English HTS
# voice (synthesis, tts-local). scripts/install-debian-packages.sh installs the same on a development machine.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ffmpeg espeak-ng festival festvox-us-slt-hts pocketsphinx pocketsphinx-en-us irstlm \
 && rm -rf /var/lib/apt/lists/*
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --chown=node:node package.json package-lock.json ./
COPY --chown=node:node config ./config
COPY --from=deps --chown=node:node /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080 9464
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The gateway is PID 1 and gets SIGTERM itself; it shuts down gracefully. Same node flags as
# `npm start` (package.json; the README says why).
CMD ["node", "--enable-source-maps", "--max-semi-space-size=32", "--max-old-space-size=1536", "dist/server.js"]
