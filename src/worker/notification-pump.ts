// Starts the pump that delivers outcome notifications (src/notifications/delivery-pump.ts): in
// APP_WEBHOOK_CONCURRENCY batches of its own, not a graphile-worker runner (delivery-pump.ts says
// why), on a pool of its own, so an app that answers slowly never holds a fulfilment connection.
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { startDeliveryPump, type DeliveryConfig, type DeliveryPump, type PumpDeps } from '../notifications/delivery-pump.js';
import type { Notifications } from '../notifications/outbox.js';

export interface NotificationPumpDeps {
  /** The deliveries' own pool. */
  db: Kysely<Database>;
  config: DeliveryConfig;
  notifications: Notifications;
  logger: Logger;
  metrics: Pick<Metrics, 'notificationAttempts'>;
  givesWayTo: PumpDeps['givesWayTo'];
  /** For tests of a stall (job-loop-watchdog.ts). */
  stallAfterMs: number | undefined;
  /** For tests of throttling: the notifications' backoff (delivery-pump.ts). */
  retryDelayMs: ((attempt: number) => number) | undefined;
}

/** Unset APP_WEBHOOK_URL writes no notification, and leaves any queued before it waiting: no pump. */
export function startNotificationPump({
  db,
  config,
  notifications,
  logger,
  metrics,
  givesWayTo,
  stallAfterMs,
  retryDelayMs,
}: NotificationPumpDeps): DeliveryPump | undefined {
  if (!notifications.enabled) return undefined;
  return startDeliveryPump({
    db,
    config,
    logger: logger.child({ task: 'deliver_notifications' }),
    observe: metrics.notificationAttempts,
    givesWayTo,
    stallAfterMs,
    ...(retryDelayMs && { retryDelayMs }),
  });
}
