// Development only: a receiver for the service's own outcome notifications, so that `npm start`
// and `npm run send-event` show an `order.paid` arriving with no app to receive it. In
// development APP_WEBHOOK_URL defaults to it (src/config/settings.ts). It verifies each
// notification as an app must (the standardwebhooks package) and logs it; it keeps nothing, so it
// does not dedupe.
import express from 'express';
import { Webhook } from 'standardwebhooks';
import type { Logger } from '../logger.js';

export const DEV_NOTIFICATION_RECEIVER_PATH = '/dev/notifications';

/** APP_WEBHOOK_URL's default in development: this receiver, in the service itself. */
export const devNotificationReceiverUrl = (port: number) => `http://127.0.0.1:${port}${DEV_NOTIFICATION_RECEIVER_PATH}`;

export function devNotificationReceiver({ secrets, logger }: { secrets: readonly string[]; logger: Logger }): express.Router {
  const keys = secrets.map((secret) => new Webhook(secret));
  const router = express.Router();
  router.post(DEV_NOTIFICATION_RECEIVER_PATH, express.text({ type: 'application/json', limit: '1mb' }), (req, res) => {
    const body = typeof req.body === 'string' ? req.body : '';
    const headers = {
      'webhook-id': req.get('webhook-id') ?? '',
      'webhook-timestamp': req.get('webhook-timestamp') ?? '',
      'webhook-signature': req.get('webhook-signature') ?? '',
    };
    // Each secret verifies alone: during a rotation the header carries one signature per secret.
    const verified = keys.some((key) => {
      try {
        key.verify(body, headers);
        return true;
      } catch {
        return false;
      }
    });
    if (!verified) {
      logger.warn({ webhookId: headers['webhook-id'] }, 'development receiver: a notification failed verification');
      return void res.status(400).json({ error: 'signature verification failed' });
    }
    const { type, data } = JSON.parse(body) as { type: string; data: unknown };
    logger.info({ webhookId: headers['webhook-id'], type, data }, `development receiver: notification ${type} received`);
    res.status(204).end();
  });
  return router;
}
