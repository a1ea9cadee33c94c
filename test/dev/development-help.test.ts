// What `npm start` prints under its start line says where the outcome notifications go, as
// configured: the service's own receiver logs each, but an app named by APP_WEBHOOK_URL receives
// them itself, and this log then shows only that each was delivered.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { developmentHelp } from '../../src/dev/development-help.js';
import { devNotificationReceiverUrl } from '../../src/dev/notification-receiver.js';

const help = (appWebhookUrls: string[]) => developmentHelp({ port: 3000, apiToken: 'dev_api_x', appWebhookUrls });

test('step 4 names the log line that shows the app being told, wherever APP_WEBHOOK_URL points', () => {
  assert.match(help([devNotificationReceiverUrl(3000)]), /4\. your app is told: +this log shows "development receiver: notification order\.paid received"/);

  const ownApp = help(['http://localhost:8080/webhooks/credits']);
  assert.doesNotMatch(ownApp, /notification order\.paid received/);
  assert.match(
    ownApp,
    /4\. your app is told: +http:\/\/localhost:8080\/webhooks\/credits receives order\.paid; this log shows "notification delivered" with its status and duration/,
  );

  assert.match(help([]), /4\. your app is told: +APP_WEBHOOK_URL is unset, so no notification is sent/);
});
