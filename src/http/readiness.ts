// Readiness: 200 only while the database answers, migrations are applied and the process is not
// shutting down. A proxy stops routing to a container that is not ready.
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

  constructor(private readonly pool: pg.Pool) {}

  markMigrated(): void {
    this.#migrated = true;
  }

  markShuttingDown(): void {
    this.#shuttingDown = true;
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  async check(): Promise<ReadinessResult> {
    if (this.#shuttingDown) return { ready: false, reason: 'shutting down' };
    if (!this.#migrated) return { ready: false, reason: 'migrations not applied yet' };
    const now = performance.now();
    if (!this.#database || now - this.#database.at > DATABASE_CHECK_TTL_MS) {
      this.#database = { at: now, result: this.#pingDatabase() };
    }
    return this.#database.result;
  }

  async #pingDatabase(): Promise<ReadinessResult> {
    try {
      await this.pool.query('select 1');
      return { ready: true };
    } catch {
      return { ready: false, reason: 'database unreachable' };
    }
  }
}
