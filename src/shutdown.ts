// Graceful shutdown on SIGTERM/SIGINT, inside SHUTDOWN_TIMEOUT_SECONDS (keep Docker's
// stop_grace_period / Coolify's Stop Grace Period a few seconds above it):
//   1. readiness answers 503 at once, so the proxy stops routing here;
//   2. HTTP keeps answering while requests still arrive, because proxies (Traefik) route to a
//      stopping container for a few seconds more; then it closes, idle keep-alives included;
//   3. the worker stops fetching and lets running jobs finish; jobs still running near the
//      deadline are failed back to the queue (not left locked for hours) — their event rows
//      stay 'processing' with their effects rolled back, and a live worker picks them up;
//   4. pools and the embedded services close, and the process exits 0.
// A second signal exits at once with code 1.
import type { Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Readiness } from './http/readiness.js';
import type { Logger } from './logger.js';
import type { Worker } from './worker/start-worker.js';

export interface ShutdownDeps {
  server: Server;
  worker: Worker | undefined;
  readiness: Readiness;
  /** Closed in order after HTTP and the worker have stopped (database pool, embedded services). */
  closers: ReadonlyArray<() => Promise<void>>;
  logger: Logger;
  timeoutMs: number;
}

export function installShutdown(deps: ShutdownDeps): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      deps.logger.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    stopping = true;
    deps.logger.info({ signal, timeoutMs: deps.timeoutMs }, 'shutting down');
    shutdown(deps).then(
      () => process.exit(0),
      (error: unknown) => {
        deps.logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

export async function shutdown({ server, worker, readiness, closers, logger, timeoutMs }: ShutdownDeps): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  readiness.markShuttingDown();

  const http = drain(server, Math.min(DRAIN_MAX_MS, timeoutMs / 5)).then(() => closeServer(server, deadline - Date.now()));

  const jobs = worker ? stopWorker(worker, deadline, logger) : Promise.resolve();
  await Promise.all([http, jobs]);
  for (const close of closers) await close();
  logger.info('shutdown complete');
}

// A proxy that still routes here sends a request every moment under load, so a quiet spell means
// it has moved on, or there is nothing to route: an idle container then stops in well under a
// second instead of waiting out the whole window. Quiet a little longer than one request's
// round trip through a proxy under load; a request that still comes later is refused and retried
// (Stripe retries every unanswered delivery), never acknowledged and lost.
const DRAIN_QUIET_MS = 500;
const DRAIN_MAX_MS = 5_000;

/** Resolves after DRAIN_QUIET_MS without a new request, or after maxMs at the latest. */
async function drain(server: Server, maxMs: number): Promise<void> {
  const end = Date.now() + maxMs;
  let lastRequest = Date.now();
  const onRequest = () => (lastRequest = Date.now());
  server.on('request', onRequest);
  try {
    for (;;) {
      const until = Math.min(end, lastRequest + DRAIN_QUIET_MS);
      if (Date.now() >= until) return;
      await sleep(until - Date.now());
    }
  } finally {
    server.off('request', onRequest);
  }
}

async function closeServer(server: Server, budgetMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Requests still running at the deadline are cut: their events are not committed, and an
  // unanswered webhook is retried by Stripe.
  const timer = setTimeout(() => server.closeAllConnections(), Math.max(0, budgetMs - 1_000));
  await closed;
  clearTimeout(timer);
}

async function stopWorker(worker: Worker, deadline: number, logger: Logger): Promise<void> {
  // Leave two seconds to fail the remaining jobs back to the queue and close the pool.
  const forceAt = Math.max(0, deadline - Date.now() - 2_000);
  const stopped = worker.stop().then(
    () => 'stopped' as const,
    (error: unknown) => {
      logger.warn({ err: error }, 'worker did not stop cleanly');
      return 'stopped' as const;
    },
  );
  const outcome = await Promise.race([stopped, sleep(forceAt).then(() => 'timeout' as const)]);
  if (outcome === 'timeout') {
    logger.warn('jobs still running at the shutdown deadline: failing them back to the queue');
    await worker.kill('shutdown deadline reached');
  }
}
