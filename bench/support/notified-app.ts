// The app the service notifies in the bench: bench/app/notification-receiver.ts as a child
// process, the environment that points a service at it, and the check both parts make of the runs
// that notified it: every paid order's notification delivered, every sampled signature verified.
import type { BenchDatabase } from './database.js';
import { spawnAnnounced } from './processes.js';
import type { Figure } from './report.js';
import { BENCH_APP_WEBHOOK_SECRET } from './service-env.js';

/** What the receiver has counted since it started. */
export interface Received {
  /** POSTs answered. */
  received: number;
  /** Of those sampled, verified by standardwebhooks, and not. */
  verified: number;
  rejected: number;
  /** OTLP exports a tracing service sent to its /v1/traces, and their bytes. */
  traceExports: number;
  traceBytes: number;
}

export interface NotifiedApp {
  /** APP_WEBHOOK_URL and APP_WEBHOOK_SECRET for a service that notifies it. */
  readonly env: Readonly<Record<string, string>>;
  /** OTEL_EXPORTER_OTLP_ENDPOINT for a service that traces: the app counts the spans' bytes at /v1/traces. */
  readonly tracingEnv: Readonly<Record<string, string>>;
  readonly pid: number;
  received(): Promise<Received>;
  stop(): Promise<void>;
}

export async function startNotifiedApp(): Promise<NotifiedApp> {
  const child = await spawnAnnounced(new URL('../app/notification-receiver.ts', import.meta.url), 'notification receiver', {
    APP_WEBHOOK_SECRET: BENCH_APP_WEBHOOK_SECRET,
  });
  return {
    env: { APP_WEBHOOK_URL: `${child.url}/notifications`, APP_WEBHOOK_SECRET: BENCH_APP_WEBHOOK_SECRET },
    tracingEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: child.url },
    pid: child.pid,
    received: async () => (await (await fetch(child.url)).json()) as Received,
    stop: () => child.stop(),
  };
}

/** What a run's database holds of its notifications: one endpoint, so one delivery each. */
export interface NotifiedOutcome {
  paid: number;
  notifications: number;
  delivered: number;
  /** Seconds from the first delivery to the last; null with fewer than two. */
  deliveredSpan: number | null;
}

export async function notifiedOutcome(db: BenchDatabase): Promise<NotifiedOutcome> {
  const { rows } = await db.pool.query<NotifiedOutcome>(`
    select (select count(*) from orders where status = 'paid')::int as paid,
           (select count(*) from notifications)::int as notifications,
           count(*) filter (where status = 'delivered')::int as delivered,
           extract(epoch from max(delivered_at) - min(delivered_at))::float8 as "deliveredSpan"
    from notification_deliveries`);
  return rows[0]!;
}

/** Pending deliveries: polled until zero, the outbox drained. */
export async function pendingDeliveries(db: BenchDatabase): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>("select count(*)::int as n from notification_deliveries where status = 'pending'");
  return rows[0]!.n;
}

/** Paid orders whose notification the app did not get, and sampled signatures that did not verify: both must be none. */
export function undeliveredFigure(part: string, name: string, outcomes: readonly NotifiedOutcome[], received: Received): Figure {
  const sum = (of: (o: NotifiedOutcome) => number) => outcomes.reduce((total, o) => total + of(o), 0);
  const [paid, delivered] = [sum((o) => o.paid), sum((o) => o.delivered)];
  return {
    part,
    name,
    value: Math.max(0, paid - delivered) + received.rejected,
    unit: '',
    target: { op: '≤', value: 0 },
    note: `${paid} orders paid, ${sum((o) => o.notifications)} notifications, ${delivered} delivered; the app answered ${received.received} POSTs and verified ${received.verified} of ${received.verified + received.rejected} sampled signatures`,
  };
}
