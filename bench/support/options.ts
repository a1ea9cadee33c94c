// What every part is given by bench/run.ts.
import type { BenchEvent } from './webhook-events.js';

export interface BenchOptions {
  /** The Postgres server; each part creates (and drops) its own database on it. */
  serverUrl: string;
  /** CI smoke mode: a couple of seconds per measurement, tiny sizes; checks the scripts run. */
  short: boolean;
  /** WORKER_CONCURRENCY of the service (and the bare graphile-worker baseline) in `drain`. */
  concurrency: number;
  /** Flags for node in every service process (`--node-flag`), e.g. V8's heap sizes. */
  nodeFlags: readonly string[];
  /** ingest and drain: rounds of every server (`--rounds N`), for a steadier ratio on a drifting host. */
  rounds?: number;
  /** ingest only: seconds of load before each measured run (`--warmup S`). */
  warmupSeconds?: number;
  /** ingest only: the event every request carries (`--event`); checkout.session.completed when unset. */
  event?: BenchEvent;
  /** ingest only: the servers to run (`--servers naive,all`); all but all-notify and all-traced when unset. */
  servers?: readonly string[];
  /** Extra environment for every service process (`--env KEY=VALUE`). */
  env: Record<string, string>;
  /** Postgres settings for every database the bench creates (`--db-setting NAME=VALUE`). */
  dbSettings: Record<string, string>;
  /** Progress lines (stderr), so stdout stays the table or the JSON. */
  log(message: string): void;
}
