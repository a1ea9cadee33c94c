// Prometheus metrics (GET /metrics). Two kinds:
// - counters and a histogram for what this process did (webhook outcomes, fulfilments, sweeps);
// - gauges read from the database at scrape time (events by status, oldest 'processing' age, jobs
//   queued, last sweep), the same figures in every process, so any one scrape tells the truth.
// Label values are bounded: outcomes and statuses are fixed sets, event types come only from
// verified events, notification types from the modules' code and endpoints from APP_WEBHOOK_URL
// (scheme, host and path: never a credential in the URL); never an event, order or account id.
// Each service instance has its own registry, so several can live in one process (the tests).
import type { Kysely } from 'kysely';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PoolObserver } from '../db/pools.js';
import type { Database } from '../db/schema.js';
import { inboxStatusReader, type InboxStatus } from '../events/read-model.js';
import type { AttemptObserver } from '../notifications/delivery-pump.js';
import { notificationSummary } from '../notifications/notification-store.js';
import type { JobLoopStatus } from '../queue/job-loop-watchdog.js';

const WEBHOOK_OUTCOMES = ['accepted', 'duplicate', 'bad_signature', 'malformed', 'too_large', 'rate_limited', 'busy', 'unavailable'] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

/**
 * A business module as its gauges are read (its ModuleGauges, src/module-contract.ts, which imports
 * this file's types: spelled out here, so that the two do not import each other).
 */
interface GaugeSource {
  readonly name: string;
  gauges?(db: Kysely<Database>): ReadonlyArray<{ readonly name: string; readonly help: string; value(): Promise<number> }>;
}

export class Metrics {
  readonly registry = new Registry();
  /**
   * The inbox's status as its gauges read it; GET /admin/api/status reads the same, so a process
   * counts the history (inboxStatusReader) once for both.
   */
  readonly inboxStatus: () => Promise<InboxStatus>;

  readonly webhookRequests = new Counter({
    name: 'stripe_inbox_webhook_requests_total',
    help: 'Webhook deliveries by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly eventsFinished = new Counter({
    name: 'stripe_inbox_events_finished_total',
    help: 'Events this process finished, by type and final status',
    labelNames: ['type', 'status'] as const,
    registers: [this.registry],
  });

  readonly handlerFailures = new Counter({
    name: 'stripe_inbox_handler_failures_total',
    help: 'Failed fulfilment attempts, by type and whether they will be retried (waits are stripe_inbox_event_waits_total)',
    labelNames: ['type', 'retry'] as const,
    registers: [this.registry],
  });

  readonly eventWaits = new Counter({
    name: 'stripe_inbox_event_waits_total',
    help: 'Fulfilment runs that parked the event to wait for something still to come (RetryLaterError), by type; not failures: it runs again when that arrives',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  readonly receivedToFinished = new Histogram({
    name: 'stripe_inbox_event_received_to_finished_seconds',
    help: 'Time from the webhook claim to the event finishing, by type',
    labelNames: ['type'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 120, 600, 3600],
    registers: [this.registry],
  });

  readonly sweepReclaims = new Counter({
    name: 'stripe_inbox_sweep_reclaims_total',
    help: 'Abandoned events the sweep re-enqueued (reclaimed) or gave up on (failed)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly reconciledEvents = new Counter({
    name: 'stripe_inbox_reconciled_events_total',
    help: "Events reconcile claimed from Stripe's lists because they were missing here (lost or never delivered)",
    registers: [this.registry],
  });

  readonly stripeRequestSeconds = new Histogram({
    name: 'stripe_inbox_stripe_request_seconds',
    help: 'Outbound Stripe API calls by operation and outcome (ok, error, timeout), retries included',
    labelNames: ['operation', 'outcome'] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30],
    registers: [this.registry],
  });

  readonly stripeCallsRefused = new Counter({
    name: 'stripe_inbox_stripe_calls_refused_total',
    help: 'Outbound Stripe calls refused because STRIPE_MAX_CONCURRENT_CALLS were in flight (answered 503)',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  readonly poolWaitSeconds = new Histogram({
    name: 'stripe_inbox_db_pool_wait_seconds',
    help: 'Time a query waited for a connection from its pool (intake, api, worker)',
    labelNames: ['pool'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly poolBusy = new Counter({
    name: 'stripe_inbox_db_pool_busy_total',
    help: 'Connection requests that timed out because every connection of the pool was in use',
    labelNames: ['pool'] as const,
    registers: [this.registry],
  });

  readonly notificationDeliveries = new Counter({
    name: 'stripe_inbox_notification_deliveries_total',
    help: 'Delivery attempts of outcome notifications, by endpoint, type and outcome (delivered, retry, failed: its attempts ran out)',
    labelNames: ['endpoint', 'type', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly notificationAttemptSeconds = new Histogram({
    name: 'stripe_inbox_notification_attempt_seconds',
    help: 'Duration of a notification delivery attempt, by endpoint and outcome',
    labelNames: ['endpoint', 'outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  /** One attempt of a notification delivery (src/notifications/delivery-pump.ts), into the two metrics above. */
  readonly notificationAttempts: AttemptObserver = (labels, seconds) => {
    this.notificationDeliveries.inc(labels);
    this.notificationAttemptSeconds.observe({ endpoint: labels.endpoint, outcome: labels.outcome }, seconds);
  };

  /** The pools' reports (src/db/pools.ts instrument()) into the two metrics above. */
  readonly poolObserver: PoolObserver = {
    waited: (pool, seconds) => this.poolWaitSeconds.observe({ pool }, seconds),
    busy: (pool) => this.poolBusy.inc({ pool }),
  };

  #jobLoops: () => Partial<Record<string, JobLoopStatus>> = () => ({});

  constructor(db: Kysely<Database>, modules: readonly GaugeSource[] = []) {
    for (const outcome of WEBHOOK_OUTCOMES) this.webhookRequests.inc({ outcome }, 0);
    collectDefaultMetrics({ register: this.registry, prefix: 'stripe_inbox_' });

    this.inboxStatus = inboxStatusReader(db);
    for (const module of modules) {
      for (const gauge of module.gauges?.(db) ?? []) {
        // A module's gauges carry its name, so two modules can never register one twice.
        if (!gauge.name.startsWith(`stripe_inbox_${module.name}_`))
          throw new Error(`gauge ${gauge.name} of module ${module.name} must start with stripe_inbox_${module.name}_`);
        new Gauge({
          name: gauge.name,
          help: gauge.help,
          registers: [this.registry],
          async collect() {
            this.set(await gauge.value());
          },
        });
      }
    }
    // One query set per scrape feeds all database gauges.
    let pending: Promise<InboxStatus> | undefined;
    const status = () => (pending ??= this.inboxStatus().finally(() => setTimeout(() => (pending = undefined), 0)));
    new Gauge({
      name: 'stripe_inbox_events',
      help: 'Stored events by status (all processes)',
      labelNames: ['status'] as const,
      registers: [this.registry],
      async collect() {
        const { counts } = await status();
        for (const [s, n] of Object.entries(counts)) this.set({ status: s }, n);
      },
    });
    const statusGauge = (name: string, help: string, value: (status: InboxStatus) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        async collect() {
          this.set(value(await status()));
        },
      });
    statusGauge(
      'stripe_inbox_oldest_processing_age_seconds',
      "Age of the oldest 'processing' event that is not waiting; 0 when none",
      (s) => s.oldest_processing_age_seconds ?? 0,
    );
    statusGauge(
      'stripe_inbox_events_waiting',
      "'processing' events parked while they wait for what Stripe delivers later (a dispute before its payment); each runs when that arrives",
      (s) => s.waiting,
    );
    statusGauge('stripe_inbox_jobs_queued', 'process_stripe_event jobs waiting or running (each carries a batch of events)', (s) => s.jobs_queued);
    statusGauge('stripe_inbox_events_queued', 'Events carried by the process_stripe_event jobs waiting or running', (s) => s.events_queued);
    const jobLoops = () => this.#jobLoops();
    const jobLoopGauge = (name: string, help: string, value: (status: JobLoopStatus) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['runner'] as const,
        registers: [this.registry],
        collect() {
          for (const [runner, status] of Object.entries(jobLoops())) if (status) this.set({ runner }, value(status));
        },
      });
    jobLoopGauge(
      'stripe_inbox_worker_progress_age_seconds',
      "Seconds since this process's worker runner (fulfilment, modules, notifications) last fetched or finished a job; over 30 while idle means stalled",
      (s) => s.progressAgeSeconds,
    );
    jobLoopGauge(
      'stripe_inbox_worker_stalled',
      "1 while this process's worker runner (fulfilment, modules, notifications) makes no progress (see /healthz), else 0",
      (s) => (s.stalled ? 1 : 0),
    );
    // Per endpoint with anything undelivered; read at scrape time, the same in every process.
    let summary: ReturnType<typeof notificationSummary> | undefined;
    const endpoints = () => (summary ??= notificationSummary(db).finally(() => setTimeout(() => (summary = undefined), 0)));
    new Gauge({
      name: 'stripe_inbox_notifications',
      help: 'Outcome notification deliveries not yet delivered, by endpoint and status (pending, failed: the dead letter)',
      labelNames: ['endpoint', 'status'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const e of await endpoints()) {
          this.set({ endpoint: e.endpoint, status: 'pending' }, e.pending);
          this.set({ endpoint: e.endpoint, status: 'failed' }, e.failed);
        }
      },
    });
    new Gauge({
      name: 'stripe_inbox_notification_oldest_pending_age_seconds',
      help: 'Age of the oldest notification still pending for the endpoint',
      labelNames: ['endpoint'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const e of await endpoints()) this.set({ endpoint: e.endpoint }, e.oldest_pending_age_seconds ?? 0);
      },
    });
    statusGauge('stripe_inbox_last_sweep_timestamp_seconds', 'When the sweep last ran (Unix time); 0 if never', (s) =>
      s.last_sweep_at ? Date.parse(s.last_sweep_at) / 1000 : 0,
    );
  }

  /** The worker's runners whose job loops the worker gauges report (a process with a worker). */
  watchJobLoops(status: () => Partial<Record<string, JobLoopStatus>>): void {
    this.#jobLoops = status;
  }
}
