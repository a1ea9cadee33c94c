// Baseline (c) for `npm run bench -- ingest`: the bare group-commit insert, the yardstick
// for what the service's design can reach on a machine. The naive handler's route, but requests
// that arrive while a commit is in flight share the next one (the service's own GroupCommit, the
// same batch limits, the bodies spliced into one JSON array as the claim does): durable and
// batched, with no verification, no claim and no job. service / this is what verifying, claiming
// and enqueueing cost on top of the batching itself.
import pg from 'pg';
import { GroupCommit } from '../../src/db/group-commit.js';
import { requiredEnvNumber } from '../support/announce.js';
import { serveWebhookBaseline } from '../support/webhook-baseline.js';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: requiredEnvNumber('POOL_SIZE', 10) });
pool.on('error', () => {});
await pool.query('create table if not exists group_commit_events (id bigint generated always as identity primary key, payload jsonb not null)');

const inserts = new GroupCommit<string, void>(
  async (bodies) => {
    await pool.query('insert into group_commit_events (payload) select value from jsonb_array_elements($1::jsonb)', [`[${bodies.join(',')}]`]);
    return bodies.map(() => undefined);
  },
  { maxBatch: 200, maxInFlight: 1, retryAlone: () => false },
);

serveWebhookBaseline(
  (body) => inserts.submit(body),
  () => pool.end(),
);
