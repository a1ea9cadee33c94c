// Part 5, abuse: the service as an unlucky operator and an attacker meet it, with its
// default limits. Three scenarios against the compiled service, one after another:
// - slow Stripe: Stripe's API accepts connections and never answers; CHECKOUTS checkouts with
//   different Idempotency-Keys hang or are refused while signed webhooks arrive at WEBHOOK_RATE.
//   Figures: the share of deliveries answered 2xx and their p99, /readyz, how checkouts ended.
// - big unverified bodies: BIG_BODIES connections each send 1 MiB − 1 byte of a 1 MiB body and
//   hold it, twice. Figures: resident memory idle, at its peak, after the connections closed, and
//   after a second such burst (the process keeps what it took and reuses it).
// - slow clients: SLOW_BODIES bodies at 1 byte a second and HEADER_DRIBBLERS header lines at
//   1 byte a second. Figure: when the last of them was closed by the service.
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { startOfflineStripe } from '../../src/dev/offline-stripe/index.js';
import { createBenchDatabase } from '../support/database.js';
import type { BenchOptions } from '../support/options.js';
import { spawnBenchService, type BenchChild } from '../support/processes.js';
import type { Figure } from '../support/report.js';
import { BENCH_TOKEN, BENCH_WEBHOOK_SECRET, serviceEnv } from '../support/service-env.js';
import { percentile, sampleRss, statusKb } from '../support/stats.js';
import { eventBodies, signatureHeader } from '../support/webhook-events.js';

const CHECKOUTS = 20;
const WEBHOOK_RATE = 20;
const BIG_BODIES = 200;
const SLOW_BODIES = 20;
const HEADER_DRIBBLERS = 5;
const FULL = { hangSeconds: 20, settleSeconds: 5, requestTimeoutSeconds: undefined as number | undefined };
// Smoke mode: a short hang, and a short request timeout so the slow clients end quickly.
const SHORT = { hangSeconds: 2, settleSeconds: 1, requestTimeoutSeconds: 2 };

export async function benchAbuse(options: BenchOptions): Promise<Figure[]> {
  const size = options.short ? SHORT : FULL;
  const database = await createBenchDatabase(options.serverUrl, { settings: options.dbSettings });
  const stripe = await startOfflineStripe();
  try {
    stripe.setDelay(3_600_000);
    const service = await spawnBenchService(
      serviceEnv(database.url, 'all', {
        STRIPE_API_BASE: stripe.url,
        ...(size.requestTimeoutSeconds !== undefined && { HTTP_REQUEST_TIMEOUT_SECONDS: String(size.requestTimeoutSeconds) }),
        ...options.env,
      }),
      options.nodeFlags,
    );
    try {
      options.log('abuse: slow Stripe');
      const slow = await slowStripe(service, size.hangSeconds);
      options.log('abuse: big unverified bodies, twice');
      const bodies = await bigBodies(service, size.settleSeconds);
      // Memory the first burst took is kept by the process and reused: a second one adds nothing.
      const again = await bigBodies(service, size.settleSeconds);
      options.log('abuse: slow clients');
      const closedAfter = await slowClients(service);
      return [
        {
          part: 'abuse',
          name: 'slow Stripe: deliveries 2xx',
          value: slow.delivered2xx * 100,
          unit: '%',
          target: { op: '≥', value: 100 },
          note: `${slow.deliveries} signed deliveries at ${WEBHOOK_RATE}/s while ${CHECKOUTS} checkouts met a Stripe that never answers; before: every delivery 503 for 19 s`,
        },
        { part: 'abuse', name: 'slow Stripe: delivery p99', value: slow.p99Ms, unit: 'ms' },
        {
          part: 'abuse',
          name: 'slow Stripe: /readyz 200',
          value: slow.ready ? 1 : 0,
          unit: '',
          display: slow.ready ? 'yes' : 'no',
          note: 'before: 503 "database unreachable"',
        },
        {
          part: 'abuse',
          name: 'slow Stripe: checkouts refused at once',
          value: slow.refused,
          unit: '',
          note: `503 with Retry-After (STRIPE_MAX_CONCURRENT_CALLS); the other ${CHECKOUTS - slow.refused} waited on Stripe`,
        },
        { part: 'abuse', name: 'big bodies: RSS idle', value: bodies.idleMb, unit: 'MB' },
        {
          part: 'abuse',
          name: 'big bodies: RSS peak',
          value: bodies.peakMb,
          unit: 'MB',
          note: `${BIG_BODIES} connections × 1 MiB − 1 byte, unsigned; ${bodies.refused} answered 503 (body budget); before: 165 → 318 MB`,
        },
        {
          part: 'abuse',
          name: 'big bodies: RSS after',
          value: bodies.afterMb,
          unit: 'MB',
          note: `${size.settleSeconds} s after the connections closed; before: 321 MB`,
        },
        {
          part: 'abuse',
          name: 'big bodies: RSS after a second burst',
          value: again.afterMb,
          unit: 'MB',
          note: `peak ${again.peakMb.toFixed(0)} MB, ${again.refused} answered 503`,
        },
        {
          part: 'abuse',
          name: 'slow clients: last closed after',
          value: closedAfter,
          unit: 's',
          note: `${SLOW_BODIES} bodies and ${HEADER_DRIBBLERS} header lines at 1 byte/s; before: never (Node's 300 s, checked every 30 s)`,
        },
      ];
    } finally {
      await service.stop();
    }
  } finally {
    await stripe.close();
    await database.drop();
  }
}

async function slowStripe(service: BenchChild, seconds: number) {
  const checkouts = Array.from({ length: CHECKOUTS }, (_, i) =>
    fetch(`${service.url}/api/checkout`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BENCH_TOKEN}`, 'content-type': 'application/json', 'idempotency-key': `abuse-${i}-${Date.now()}` },
      body: JSON.stringify({ package_id: 'starter', account_id: `acct_abuse_${i}` }),
    }).then(
      (r) => r.status,
      () => 0,
    ),
  );
  // Refused checkouts answer at once; the others hang for the whole scenario.
  const refused = (await Promise.all(checkouts.map((c) => Promise.race([c, sleep(1_000).then(() => -1)])))).filter((s) => s === 503).length;
  const events = eventBodies(seconds * WEBHOOK_RATE);
  const latencies: number[] = [];
  let ok = 0;
  for (let i = 0; i < events.count; i++) {
    const body = events.body(i);
    const started = performance.now();
    const reply = await fetch(`${service.url}/webhooks/stripe`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'stripe-signature': signatureHeader(body, BENCH_WEBHOOK_SECRET) },
    }).catch(() => undefined);
    latencies.push(performance.now() - started);
    if (reply?.ok) ok++;
    await reply?.arrayBuffer();
    await sleep(1000 / WEBHOOK_RATE);
  }
  const ready = (await fetch(`${service.url}/readyz`)).status === 200;
  return { deliveries: events.count, delivered2xx: ok / events.count, p99Ms: percentile(latencies, 99), ready, refused };
}

async function bigBodies(service: BenchChild, settleSeconds: number) {
  const { port } = new URL(service.url);
  const rssMb = () => (statusKb(service.pid, 'VmRSS') ?? 0) / 1024;
  const idleMb = rssMb();
  const sampler = sampleRss([service.pid]);
  const body = Buffer.alloc(1024 * 1024 - 1, 'x');
  let refused = 0;
  const sockets = await Promise.all(
    Array.from({ length: BIG_BODIES }, async () => {
      const socket = net.connect(Number(port), '127.0.0.1');
      socket.on('error', () => {});
      socket.once('data', (chunk: Buffer) => chunk.toString('latin1').startsWith('HTTP/1.1 503') && refused++);
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(`POST /webhooks/stripe HTTP/1.1\r\nHost: localhost\r\nStripe-Signature: t=1,v1=00\r\nContent-Length: ${1024 * 1024}\r\n\r\n`);
      socket.write(body);
      return socket;
    }),
  );
  await sleep(2_000);
  for (const socket of sockets) socket.destroy();
  await sleep(settleSeconds * 1000);
  const { peakMb } = sampler.stop();
  return { idleMb, peakMb, afterMb: rssMb(), refused };
}

/** Seconds until the service closed the last of the slow connections. */
async function slowClients(service: BenchChild): Promise<number> {
  const { port } = new URL(service.url);
  const started = performance.now();
  const request = (contentLength: number) => `POST /webhooks/stripe HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${contentLength}\r\n\r\n`;
  const clients = [
    ...Array.from({ length: SLOW_BODIES }, () => ({ head: request(10_000), drip: 'x'.repeat(10_000) })),
    ...Array.from({ length: HEADER_DRIBBLERS }, () => ({ head: '', drip: request(10) })),
  ];
  const closed = clients.map(({ head, drip }) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    socket.on('error', () => {});
    let sent = 0;
    const timer = setInterval(() => sent < drip.length && socket.write(drip[sent++]!), 1_000);
    socket.once('connect', () => head && socket.write(head));
    return new Promise<number>((resolve) =>
      socket.once('close', () => {
        clearInterval(timer);
        resolve((performance.now() - started) / 1000);
      }),
    );
  });
  return Math.max(...(await Promise.all(closed)));
}
