// Which module a table of handlers belongs to, for the handler spans' `stripe_inbox.module`
// (src/fulfilment/handler-span.ts). Marked by defineModule (src/business-module.ts) when it builds
// a module's handlers; kept by object identity, so the handlers' own shape (the module contract,
// types only) stays as modules write it.
import type { Handlers } from '../module-contract.js';

const owners = new WeakMap<Handlers, string>();

/** Marks a module's handlers as its own, so that their traces name it (src/fulfilment/dispatch.ts). */
export function ownHandlers(module: string, handlers: Handlers): Handlers {
  owners.set(handlers, module);
  return handlers;
}

/** The module whose handlers these are; 'unknown' for a table no module marked (a test's own). */
export function ownerOfHandlers(handlers: Handlers): string {
  return owners.get(handlers) ?? 'unknown';
}
