// Readiness: 200 only while the database answers, migrations are applied and the process is not
// shutting down. A proxy stops routing to a container that is not ready.
import type pg from 'pg';

export class Readiness {
  #migrated = false;
  #shuttingDown = false;

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

  async check(): Promise<{ ready: true } | { ready: false; reason: string }> {
    if (this.#shuttingDown) return { ready: false, reason: 'shutting down' };
    if (!this.#migrated) return { ready: false, reason: 'migrations not applied yet' };
    try {
      await this.pool.query('select 1');
      return { ready: true };
    } catch {
      return { ready: false, reason: 'database unreachable' };
    }
  }
}
