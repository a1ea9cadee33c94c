// Baseline (b) for `npm run bench -- ingest`: the naive durable handler. The ceiling's route plus
// one INSERT of the body into a jsonb table through a pg Pool (POOL_SIZE, default 10), answered
// after the INSERT commits: durable, but no verification, no claim, no job.
import pg from 'pg';
import { requiredEnvNumber } from '../support/announce.js';
import { serveWebhookBaseline } from '../support/webhook-baseline.js';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: requiredEnvNumber('POOL_SIZE', 10) });
pool.on('error', () => {});
await pool.query('create table if not exists naive_events (id bigint generated always as identity primary key, payload jsonb not null)');

serveWebhookBaseline(
  async (body) => {
    await pool.query('insert into naive_events (payload) values ($1)', [body]);
  },
  () => pool.end(),
);
