// Baseline (c) for `npm run bench -- ingest`: the bare group-commit insert, the yardstick
// for what the service's design can reach on a machine. The naive handler's route, but requests
// that arrive while a commit is in flight share the next one (the service's own GroupCommit, the
// same batch limits, the bodies spliced into one JSON array as the claim does): durable and
// batched, with no verification, no claim and no job. service / this is what verifying, claiming
// and enqueueing cost on top of the batching itself.
import type { Server } from 'node:http';
import express from 'express';
import pg from 'pg';
import { GroupCommit } from '../../src/db/group-commit.js';
import { announceReady, exitWithParent, requiredEnvNumber } from '../support/announce.js';

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

const app = express();
app.disable('x-powered-by');
app.post('/webhooks/stripe', express.raw({ type: () => true, limit: '1mb', inflate: false }), async (req, res) => {
  try {
    await inserts.submit(Buffer.isBuffer(req.body) ? req.body.toString() : '{}');
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
