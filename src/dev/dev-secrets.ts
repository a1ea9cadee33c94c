// Development only: a webhook secret and API/admin tokens generated once per checkout and kept
// in ./.data/dev-secrets.json, so `npm start` needs no configuration and `npm run send-event`
// signs with the secret the running service checks. Never consulted when NODE_ENV=production.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

export interface DevSecrets {
  readonly webhookSecret: string;
  readonly apiToken: string;
  readonly adminToken: string;
  readonly file: string;
}

export function loadDevSecrets(dataDir = '.data'): DevSecrets {
  const file = resolve(dataDir, 'dev-secrets.json');
  try {
    const stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<DevSecrets>;
    if (stored.webhookSecret && stored.apiToken && stored.adminToken) {
      return { webhookSecret: stored.webhookSecret, apiToken: stored.apiToken, adminToken: stored.adminToken, file };
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`reading ${file}`, { cause: error });
  }
  const secrets = {
    webhookSecret: `whsec_dev_${randomBytes(24).toString('hex')}`,
    apiToken: `dev_api_${randomBytes(16).toString('hex')}`,
    adminToken: `dev_admin_${randomBytes(16).toString('hex')}`,
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
