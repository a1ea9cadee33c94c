// Development only: a webhook secret, API/admin tokens and the signing secret of outcome
// notifications, generated once per checkout and kept in ./.data/dev-secrets.json, so `npm start` needs no configuration and `npm run send-event`
// signs with the secret the running service checks. Never consulted when NODE_ENV=production.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

export interface DevSecrets {
  readonly webhookSecret: string;
  readonly apiToken: string;
  readonly adminToken: string;
  /** Signs outcome notifications (APP_WEBHOOK_SECRET): Standard Webhooks' whsec_ and base64 of 32 bytes. */
  readonly appWebhookSecret: string;
  readonly file: string;
}

const newAppWebhookSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export function loadDevSecrets(dataDir = '.data'): DevSecrets {
  const file = resolve(dataDir, 'dev-secrets.json');
  try {
    const stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<DevSecrets>;
    if (stored.webhookSecret && stored.apiToken && stored.adminToken) {
      const kept = { webhookSecret: stored.webhookSecret, apiToken: stored.apiToken, adminToken: stored.adminToken };
      if (stored.appWebhookSecret) return { ...kept, appWebhookSecret: stored.appWebhookSecret, file };
      // A file from a release before notifications: the secrets in use stay, the new one is added.
      const secrets = { ...kept, appWebhookSecret: newAppWebhookSecret() };
      writeFileSync(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600 });
      return { ...secrets, file };
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`reading ${file}`, { cause: error });
  }
  const secrets = {
    webhookSecret: `whsec_dev_${randomBytes(24).toString('hex')}`,
    apiToken: `dev_api_${randomBytes(16).toString('hex')}`,
    adminToken: `dev_admin_${randomBytes(16).toString('hex')}`,
    appWebhookSecret: newAppWebhookSecret(),
  };
  mkdirSync(dataDir, { recursive: true });
  // 'wx' so two processes starting at once cannot overwrite each other's secrets.
  try {
    writeFileSync(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadDevSecrets(dataDir);
    throw error;
  }
  return { ...secrets, file };
}
