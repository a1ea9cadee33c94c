// Baseline (b) for `npm run bench -- ingest`: the naive durable handler. The ceiling's route plus
// one INSERT of the body into a jsonb table through a pg Pool (POOL_SIZE, default 10), answered
// after the INSERT commits: durable, but no verification, no claim, no job.
import type { Server } from 'node:http';
import express from 'express';
import pg from 'pg';
import { announceReady, exitWithParent, requiredEnvNumber } from '../support/announce.js';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: requiredEnvNumber('POOL_SIZE', 10) });
pool.on('error', () => {});
await pool.query('create table if not exists naive_events (id bigint generated always as identity primary key, payload jsonb not null)');

const app = express();
app.disable('x-powered-by');
app.post('/webhooks/stripe', express.raw({ type: () => true, limit: '1mb', inflate: false }), async (req, res) => {
  try {
    await pool.query('insert into naive_events (payload) values ($1)', [Buffer.isBuffer(req.body) ? req.body.toString() : '{}']);
    res.json({ received: true });
  } catch {
    res.status(503).json({ error: 'database unavailable' });
  }
});

const server: Server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  announceReady({ url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` });
});
exitWithParent(async () => {
  await new Promise((resolve) => server.close(resolve));
  await pool.end();
});
