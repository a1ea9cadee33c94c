// Baseline (a) for `npm run bench -- ingest`: the HTTP ceiling. The same Express 5 route shape as
// the service's webhook (raw body, 1 MiB limit) answering {"received":true}, with no database,
// no verification: what one Node process can answer on this machine.
import { serveWebhookBaseline } from '../support/webhook-baseline.js';

serveWebhookBaseline();
