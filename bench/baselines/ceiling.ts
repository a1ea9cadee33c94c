// Baseline (a) for `npm run bench -- ingest`: the HTTP ceiling. The same Express 5 route shape as
// the service's webhook (raw body, 1 MiB limit) answering {"received":true}, with no database,
// no verification: what one Node process can answer on this machine.
import type { Server } from 'node:http';
import express from 'express';
import { announceReady, exitWithParent } from '../support/announce.js';

const app = express();
app.disable('x-powered-by');
app.post('/webhooks/stripe', express.raw({ type: () => true, limit: '1mb', inflate: false }), (_req, res) => {
  res.json({ received: true });
});

const server: Server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  announceReady({ url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` });
});
exitWithParent(() => new Promise((resolve) => server.close(() => resolve())));
