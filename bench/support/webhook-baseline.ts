// The ingest baselines' common part: the service's webhook route shape in Express 5 (raw body,
// 1 MiB limit, answered {"received":true}) on a free loopback port, announced to the bench and
// closed when the bench goes. Each baseline differs only in what it does with the body first.
import type { Server } from 'node:http';
import express from 'express';
import { announceReady, exitWithParent } from './announce.js';

/**
 * `store`: awaited before the answer (a 503 if it throws); none for the ceiling, whose handler then
 * stays synchronous. `stop`: after the server has closed (ending a pool).
 */
export function serveWebhookBaseline(store?: (body: string) => Promise<void>, stop: () => Promise<void> = async () => {}): void {
  const app = express();
  app.disable('x-powered-by');
  const rawBody = express.raw({ type: () => true, limit: '1mb', inflate: false });
  app.post(
    '/webhooks/stripe',
    rawBody,
    store
      ? async (req, res) => {
          try {
            await store(Buffer.isBuffer(req.body) ? req.body.toString() : '{}');
            res.json({ received: true });
          } catch {
            res.status(503).json({ error: 'database unavailable' });
          }
        }
      : (_req, res) => {
          res.json({ received: true });
        },
  );
  const server: Server = app.listen(0, '127.0.0.1', () => {
    const address = server.address();
    announceReady({ url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` });
  });
  exitWithParent(async () => {
    await new Promise((resolve) => server.close(resolve));
    await stop();
  });
}
