# syntax=docker/dockerfile:1
# Multi-stage build: dependencies are installed from the lockfile in a build stage; the runtime
# stage runs as the unprivileged `node` user with the same start command as the README (npm start).
# (No Docker engine runs on our development machines; this file is kept correct by review.)

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only; tsx (a runtime dependency) runs the TypeScript sources directly.
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --chown=node:node package.json package-lock.json tsconfig.json ./
COPY --chown=node:node config ./config
COPY --chown=node:node machines ./machines
COPY --chown=node:node src ./src
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# npm forwards SIGTERM to the gateway, which shuts down gracefully.
CMD ["npm", "start"]
