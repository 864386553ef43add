# Plant Store in a container: docker build -t plant-store . && docker run -p 8080:8080 -v plants:/data plant-store
# Node 22, a supported LTS line (Node 20 reached its end of life on 2026-04-30; see
# docs/guides/deploying.md, "Node.js versions").
# Build stage: builds the SQLite driver from source and compiles the TypeScript.
FROM node:22-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# The dependencies first, from the package files alone: this layer (and the
# SQLite build in it) is reused until package.json or package-lock.json change.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3
# Then the sources, and the build; then drop the dev dependencies.
COPY . .
RUN npm run build && npm prune --omit=dev

# Run stage: no compiler, no sources, no root.
FROM node:22-slim
ENV NODE_ENV=production \
    PLANTS_HOST=0.0.0.0 \
    PLANTS_PORT=8080 \
    PLANTS_DB=/data/plants.db
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
RUN mkdir /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
# The image has no curl: Node's fetch asks /healthz.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PLANTS_PORT || process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains in-flight requests for up to 25 s: stop with --stop-timeout 30 (docker's default is 10 s).
STOPSIGNAL SIGTERM
# --single-threaded-gc: V8 collects garbage on the thread that serves requests instead of handing parts of it to
# helper threads, which on a container's one or two CPUs only take turns with that thread (README, Performance).
ENTRYPOINT ["node", "--single-threaded-gc", "dist/src/cli/bin.js"]
CMD ["serve"]
