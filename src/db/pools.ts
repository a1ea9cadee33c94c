// The service's connection pools, one per kind of work, so that one kind cannot starve the
// others: `intake` for the webhook's claims and /readyz, `api` for /api and /admin, `worker` for
// graphile-worker and fulfilment, `notifications` for the deliveries to the app (each batch's
// lease and record). However long API requests hold connections, a webhook delivery
// still gets one, and the worker keeps fulfilling. Connections open on first use, so a role that
// never uses a pool (ROLE=worker has no API) costs nothing for it.
//
// Each pool reports how long a query waited for a connection, and a wait that timed out because
// every connection was checked out is a PoolBusyError, told apart from a database that cannot be
// reached: "all our connections are busy" and "Postgres is down" call for different fixes. The
// reports go to the observer handed to instrument() (the service's metrics).
import type pg from 'pg';
import type { DatabaseUrls } from './connection-pooler.js';
import { openDatabase, type Db } from './database.js';

const POOL_NAMES = ['intake', 'api', 'worker', 'notifications'] as const;
export type PoolName = (typeof POOL_NAMES)[number];
/** How each pool's sessions are named in pg_stat_activity: `npm run status` finds the worker's there. */
export const applicationNameOf = (name: PoolName) => `stripe-inbox-${name}`;

/** Every connection of the pool was checked out for the whole connection timeout. */
export class PoolBusyError extends Error {
  constructor(
    readonly pool: string,
    options: { cause: unknown },
  ) {
    super(`all connections of the ${pool} pool were in use`, options);
  }
}

/** What the pools report, by pool. */
export interface PoolObserver {
  /** A checkout got its connection after this wait. */
  waited(pool: PoolName, seconds: number): void;
  /** A checkout timed out with every connection of the pool checked out (PoolBusyError). */
  busy(pool: PoolName): void;
}

export interface ServicePools extends Record<PoolName, Db> {
  /** Reports waits and busy timeouts of every pool to `observer` from now on; nothing before. */
  instrument(observer: PoolObserver): void;
  close(): Promise<void>;
}

export interface PoolSizes {
  workerConcurrency: number;
  moduleJobConcurrency: number;
  appWebhookConcurrency: number;
  /** Tests only: a tighter query deadline than the default (database.ts). */
  queryDeadlineMs?: number;
}

/**
 * The pools on `urls` (src/db/connection-pooler.ts): the worker's where sessions hold, the others'
 * on `urls.url`. A plain URL serves all four, with sessions.
 */
export function openServicePools(
  urls: string | DatabaseUrls,
  { workerConcurrency, moduleJobConcurrency, appWebhookConcurrency, queryDeadlineMs }: PoolSizes,
): ServicePools {
  const { url, sessionUrl, transactionPooled } = typeof urls === 'string' ? { url: urls, sessionUrl: urls, transactionPooled: false } : urls;
  const sizes: Record<PoolName, number> = {
    // The claim batcher keeps one claim transaction in flight (src/events/claim-batcher.ts); the
    // rest is /readyz and a connection being replaced.
    intake: 3,
    api: 8,
    // Each concurrent job of both runners (src/worker/fulfilment-runner.ts, module-jobs-runner.ts:
    // its transaction, then graphile-worker's completion of it), plus each runner's LISTEN client
    // and their bookkeeping.
    worker: workerConcurrency + moduleJobConcurrency + 4,
    // No connection is held across a POST: the pump's lease of the next batch, and each batch's
    // record (src/notifications/delivery-pump.ts).
    notifications: appWebhookConcurrency + 1,
  };
  let observer: PoolObserver | undefined;
  const open = (name: PoolName): Db => {
    // graphile-worker LISTENs, prepares its statements, and its connection runs the migrations.
    const session = name === 'worker';
    const db = openDatabase(session ? sessionUrl : url, {
      maxConnections: sizes[name],
      transactionPooled: !session && transactionPooled,
      applicationName: applicationNameOf(name),
      // A delivery's lease or record lost to a crash of Postgres is sent again: at least once
      // allows it, and each batch then costs no wait for a disk flush.
      asynchronousCommit: name === 'notifications',
      ...(queryDeadlineMs !== undefined && { queryDeadlineMs }),
    });
    watchWaits(db.pool, name, {
      waited: (seconds) => observer?.waited(name, seconds),
      busy: () => observer?.busy(name),
    });
    return db;
  };
  const pools = { intake: open('intake'), api: open('api'), worker: open('worker'), notifications: open('notifications') };
  return {
    ...pools,
    instrument(target) {
      observer = target;
    },
    async close() {
      await Promise.all(POOL_NAMES.map((name) => pools[name].close()));
    },
  };
}

type ConnectCallback = (error: Error | undefined, client: pg.PoolClient | undefined, release: (error?: Error | boolean) => void) => void;

/**
 * Times every checkout of `pool` and turns a connection timeout into PoolBusyError when every
 * connection was checked out at that moment. pg's Pool reports its own wait timeout and a
 * connect timeout to an unresponsive server with the same message, so the count of checked-out
 * connections, kept here, is what tells them apart.
 */
function watchWaits(pool: pg.Pool, name: string, report: { waited(seconds: number): void; busy(): void }): void {
  let checkedOut = 0;
  const connect = pool.connect.bind(pool) as (callback: ConnectCallback) => void;
  const checkout = (callback: ConnectCallback) => {
    const started = performance.now();
    connect((error, client, pgRelease) => {
      if (error || !client) {
        const full = checkedOut >= (pool.options.max ?? 10);
        if (full) report.busy();
        return callback(full ? new PoolBusyError(name, { cause: error }) : error, client, pgRelease);
      }
      report.waited((performance.now() - started) / 1000);
      checkedOut++;
      // pg hands out a fresh release (also set as client.release) on every checkout.
      const release = (err?: Error | boolean) => {
        checkedOut--;
        pgRelease(err);
      };
      client.release = release;
      callback(undefined, client, release);
    });
  };
  // Both forms of pg's connect: Pool.query itself uses the callback one.
  pool.connect = ((callback?: ConnectCallback) => {
    if (callback) return checkout(callback);
    return new Promise<pg.PoolClient>((resolve, reject) =>
      checkout((error, client) => (error || !client ? reject(error ?? new Error('no client')) : resolve(client))),
    );
  }) as typeof pool.connect;
}
