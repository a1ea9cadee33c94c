# One image for every ROLE (all, web, worker): `node dist/src/main.js`, compiled from TypeScript.
# How it is deployed (docker compose, Coolify): docs/deploy.md. test/deploy checks this file and
# runs the build stage's steps and the runtime command against Postgres.

# Node 26 LTS (supported until April 2029), the major package.json's engines and its `node` dev
# dependency name. The major is pinned; the patch follows the tag, so a rebuild picks up security
# releases.
FROM node:26-bookworm-slim AS base
WORKDIR /app

# Production dependencies only: no tsx, no embedded Postgres, no linters. (TypeScript itself
# still comes along, as an optional peer of graphile-worker's cosmiconfig.)
FROM base AS deps
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# Compile src/, tasks/ and scripts/ into dist/, with the SQL migrations, the sample-event
# fixtures and the OpenAPI document (GET /openapi.json) beside the compiled code (all are read
# relative to it).
FROM base AS build
COPY package.json package-lock.json ./
# No install scripts: compiling needs none, and the `node` dev dependency's would download a
# second Node (about 50 MB) into a stage that already runs on one.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY sql ./sql
COPY src ./src
COPY tasks ./tasks
COPY scripts ./scripts
COPY docs/openapi.json ./docs/
RUN npm run build

FROM base AS runtime
ENV NODE_ENV=production
# V8's heap sized for the service, not for the host. Left alone, V8 sizes it from the machine's
# memory, and on a large host lets garbage from a burst of webhooks pile up to several times what
# the service keeps live before it collects: resident memory then follows the host, not the load.
# These two caps keep it bounded and small, for a little more garbage collection at saturation;
# docs/benchmarks.md ("What bounds each number": service RSS) has both sides measured. What the
# service holds is bounded (bodies, pools, batches) and far below 256 MB; a process that ever
# reaches it ends with "JavaScript heap out of memory", compose restarts it, and the sweep takes
# over its events.
# --expose-gc lets the service hand V8's young generation back when it has nothing to do
# (src/trim-heap.ts). To change any of the three, set NODE_OPTIONS in .env: it replaces this value.
ENV NODE_OPTIONS="--max-old-space-size=256 --max-semi-space-size=8 --expose-gc"
# package.json marks dist/*.js as ES modules ("type": "module") and names the release /healthz
# reports; LICENSE goes wherever the code does (MIT asks it). Files stay owned by root: the
# service writes nothing to disk, and cannot rewrite its own code.
COPY package.json LICENSE ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000
# /readyz: 200 only with the database reachable, migrations applied and no shutdown under way.
# Node's own fetch, because the slim image has neither curl nor wget. PORT is read at run time.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/readyz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form, node as the process itself: npm and `sh -c` would not pass SIGTERM on, and the
# graceful shutdown (src/shutdown.ts) needs it to exit 0. The base image's entrypoint
# (docker-entrypoint.sh) execs this command, so nothing stays in between. Run the container with
# an init (compose `init: true`, `docker run --init`, Coolify `--init`): as PID 1, node would
# ignore every signal it has no handler for and reap no zombies.
CMD ["node", "dist/src/main.js"]
