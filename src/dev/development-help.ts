// Development only: what `npm start` prints under its start line, the quick start's commands with
// this checkout's token filled in. Step 4 says where the outcome notifications go, as configured:
// the service's own receiver logs each one it receives, but an app named by APP_WEBHOOK_URL
// receives them in its own log, and this one shows only that each was delivered.
import { devNotificationReceiverUrl } from './notification-receiver.js';

export interface DevelopmentHelpSettings {
  readonly port: number;
  readonly apiToken: string;
  readonly appWebhookUrls: readonly string[];
}

export function developmentHelp({ port, apiToken, appWebhookUrls }: DevelopmentHelpSettings): string {
  const base = `http://localhost:${port}`;
  const auth = `-H 'Authorization: Bearer ${apiToken}'`;
  return `
  stripe-inbox is listening on ${base} (development mode)

  1. create an order:       curl -s -X POST ${base}/api/checkout ${auth} -H 'Content-Type: application/json' -d '{"package_id":"starter","account_id":"acct_demo"}'
  2. pay it (signed event): npm run send-event -- checkout.session.completed --order <order_id from step 1>
                            (or open the url from step 1: its page names the command for that order)
  3. see the credits:       curl -s ${base}/api/accounts/acct_demo/quota ${auth}
  4. your app is told:      ${notificationHelp(appWebhookUrls, port)}

`;
}

function notificationHelp(urls: readonly string[], port: number): string {
  if (urls.length === 0) return 'APP_WEBHOOK_URL is unset, so no notification is sent (docs/notifications.md)';
  if (urls.length === 1 && urls[0] === devNotificationReceiverUrl(port))
    return `this log shows "development receiver: notification order.paid received" (APP_WEBHOOK_URL: ${urls.join(', ')})`;
  return `${urls.join(', ')} receives order.paid; this log shows "notification delivered" with its status and duration`;
}
