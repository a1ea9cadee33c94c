// Running handlers without a worker: the fulfilment loop the worker runs (fulfilEvents), called
// directly, so a test drives each attempt itself. docs/handlers.md shows how a new handler is
// tested with `fulfilWith`.
import type { StripeEventRow } from '../../src/db/schema.js';
import { claimEvents } from '../../src/events/event-store.js';
import { createDispatch, type Dispatch } from '../../src/fulfilment/dispatch.js';
import { fulfilEvents, type FulfilResult } from '../../src/fulfilment/fulfil-event.js';
import type { BusinessModule, Handlers } from '../../src/module-contract.js';
import { businessModules } from '../../src/modules/index.js';
import { createOutbox } from '../../src/notifications/outbox.js';
import type { SampleEvent } from '../../src/stripe/sample-events.js';
import type { TestDatabase } from './database.js';
import { eventRow, incomingEvent } from './factories.js';
import { testConfig } from './service.js';

/** A module's handlers as the worker builds them from `env`'s configuration, with its outbox. */
export function handlersOf(module: BusinessModule, env: Record<string, string> = {}): Handlers {
  const config = testConfig(env);
  return module.handlers(config, createOutbox(config));
}

/** The service's own handlers, all modules, as the worker builds them from `env`'s configuration. */
export function serviceDispatch(env: Record<string, string> = {}): Dispatch {
  const config = testConfig(env);
  return createDispatch({ livemode: config.stripeLivemode, handlers: businessModules.map((module) => handlersOf(module, env)) });
}

/**
 * Stores `events` as the webhook does (claimed, each with its job), then fulfils them in one
 * batch with only `handlers` registered (one module's, or several modules' in order), as the
 * worker would: one transaction, the handlers' writes and the status flips committed together.
 * Returns the result for each event and its row afterwards. No worker runs, so the jobs stay
 * queued and nothing else touches the rows.
 */
export async function fulfilWith(
  database: TestDatabase,
  handlers: Handlers | readonly Handlers[],
  events: readonly SampleEvent[],
  options: { maxAttempts?: number } = {},
): Promise<Array<{ result: FulfilResult; row: StripeEventRow }>> {
  const maxAttempts = options.maxAttempts ?? 10;
  await claimEvents(database.db, events.map(incomingEvent), { maxAttempts });
  const dispatch = createDispatch({ livemode: false, handlers: Array.isArray(handlers) ? handlers : [handlers] });
  const results = await fulfilEvents(
    database.db,
    events.map((event) => event.id),
    { maxAttempts, dispatch },
  );
  return Promise.all(events.map(async (event, i) => ({ result: results[i]!, row: await eventRow(database, event.id) })));
}
