// maintenance_runs: when each periodic job last ran and what it did. Its one writer and reader.
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

/** The periodic jobs that record their runs here, by the name stored in maintenance_runs.name. */
export type MaintenanceRun = 'sweep' | 'prune' | 'reconcile';

export async function recordMaintenanceRun(db: Kysely<Database>, name: MaintenanceRun, result: Record<string, number | boolean>): Promise<void> {
  await sql`
    insert into maintenance_runs (name, last_run_at, last_result) values (${name}, now(), ${JSON.stringify(result)}::jsonb)
    on conflict (name) do update set last_run_at = excluded.last_run_at, last_result = excluded.last_result`.execute(db);
}

export async function lastMaintenanceRun(db: Kysely<Database>, name: MaintenanceRun): Promise<Date | null> {
  const { rows } = await sql<{ last_run_at: Date }>`select last_run_at from maintenance_runs where name = ${name}`.execute(db);
  return rows[0]?.last_run_at ?? null;
}
