// The app the bench's service notifies (APP_WEBHOOK_URL): a node:http server that answers 204 to
// every POST once its body has arrived, and counts them; GET answers the counts. A process of its
// own, as the baselines are: inside the bench it would take turns from autocannon's event loop
// only while a notifying server runs (lowering the very figure compared), and its CPU could not be
// told from the load generator's.
//
// The first request and every SAMPLE_EVERY-th are verified with `standardwebhooks`, the
// specification's reference implementation, which proves the deliveries are real signed
// notifications. Not every one: its pure-JavaScript SHA-256 takes about 20 µs a verification here,
// a few per cent of a core at the service's delivery rate, taken from the two cores the service
// and Postgres share. An app that fails a signature still gets 204 (and is counted): a 400 would
// only turn the bench's figure into a timeout while the service retries.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { announceReady, exitWithParent } from '../support/announce.js';

const SAMPLE_EVERY = 100;

const secret = process.env.APP_WEBHOOK_SECRET;
if (!secret) throw new Error('APP_WEBHOOK_SECRET is required');
const verifier = new Webhook(secret);
const counts = { received: 0, verified: 0, rejected: 0, traceExports: 0, traceBytes: 0 };

function verify(req: IncomingMessage, body: string): void {
  const header = (name: string) => String(req.headers[name] ?? '');
  try {
    verifier.verify(body, {
      'webhook-id': header('webhook-id'),
      'webhook-timestamp': header('webhook-timestamp'),
      'webhook-signature': header('webhook-signature'),
    });
    counts.verified++;
  } catch {
    counts.rejected++;
  }
}

// A service that traces (bench all-traced) exports its spans here too, as OTLP/HTTP JSON: counted
// in bytes as they arrive and answered with OTLP's empty success, not parsed.
function traceExport(req: IncomingMessage, res: ServerResponse): void {
  counts.traceExports++;
  req.on('data', (chunk: Buffer) => (counts.traceBytes += chunk.length));
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
}

const server = createServer((req, res) => {
  if (req.method !== 'POST') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(counts));
  if (req.url === '/v1/traces') return traceExport(req, res);
  const sampled = counts.received++ % SAMPLE_EVERY === 0;
  const chunks: Buffer[] = [];
  if (sampled) req.on('data', (chunk: Buffer) => chunks.push(chunk));
  else req.resume();
  req.on('end', () => {
    if (sampled) verify(req, Buffer.concat(chunks).toString('utf8'));
    res.writeHead(204).end();
  });
});
server.listen(0, '127.0.0.1', () => announceReady({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
exitWithParent(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
