// Readiness: 200 only while the database answers and takes writes (not a standby), migrations
// are applied and the process is not shutting down. A proxy stops routing to a container that is not ready.
//
// Liveness: 200 unless the worker's job loop is stalled (src/queue/job-loop-watchdog.ts). A
// worker that cannot reach its database fulfils nothing while the process looks alive, so this
// is what shows it. It also gates readiness for ROLE=worker, which serves nothing else; for
// ROLE=all it does not, because that process's webhook intake runs on its own pool and may be
// fine: taking it out of the proxy would refuse Stripe's deliveries for a worker's fault.
//
// The database answer is kept for a second: /readyz needs no token, and a flood of probes must
// not become a flood of queries on the pool the webhook claims with. Probes arriving while a
// check runs share it.
import type pg from 'pg';

const DATABASE_CHECK_TTL_MS = 1_000;

export type ReadinessResult = { ready: true } | { ready: false; reason: string };

export class Readiness {
  #migrated = false;
  #shuttingDown = false;
  #database: { at: number; result: Promise<ReadinessResult> } | undefined;
  #jobLoop: { stalled: () => string | undefined; gatesReadiness: boolean } | undefined;

  constructor(private readonly pool: pg.Pool) {}

  markMigrated(): void {
    this.#migrated = true;
  }

  markShuttingDown(): void {
    this.#shuttingDown = true;
  }

  /** `stalled`: why the worker's job loop is stuck, undefined while it makes progress. */
  watchJobLoop(stalled: () => string | undefined, { gatesReadiness }: { gatesReadiness: boolean }): void {
    this.#jobLoop = { stalled, gatesReadiness };
  }

  live(): ReadinessResult {
    const stalled = this.#jobLoop?.stalled();
    return stalled ? { ready: false, reason: stalled } : { ready: true };
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  async check(): Promise<ReadinessResult> {
    if (this.#shuttingDown) return { ready: false, reason: 'shutting down' };
    if (!this.#migrated) return { ready: false, reason: 'migrations not applied yet' };
    if (this.#jobLoop?.gatesReadiness) {
      const live = this.live();
      if (!live.ready) return live;
    }
    const now = performance.now();
    if (!this.#database || now - this.#database.at > DATABASE_CHECK_TTL_MS) {
      this.#database = { at: now, result: this.#pingDatabase() };
    }
    return this.#database.result;
  }

  async #pingDatabase(): Promise<ReadinessResult> {
    let readOnly: boolean;
    try {
      const { rows } = await this.pool.query<{ read_only: boolean }>("select current_setting('transaction_read_only') = 'on' as read_only");
      readOnly = rows[0]!.read_only;
    } catch {
      return { ready: false, reason: 'database unreachable' };
    }
    // A standby answers queries but takes no claim: a container whose URL leads there (or whose
    // primary is being demoted) must leave the proxy until it leads to the primary again.
    return readOnly ? { ready: false, reason: 'database is read-only (a standby?): DATABASE_URL must lead to the primary' } : { ready: true };
  }
}
