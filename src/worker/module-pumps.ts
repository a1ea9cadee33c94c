// The modules' outbox pumps (`pumps?(context)` in the module contract): a loop each, in every
// worker process, beside the graphile-worker runners. A pump claims its rows with SKIP LOCKED, so
// the loops of several processes share the work; it holds no transaction across its calls to
// Stripe, so it never holds a connection that intake or fulfilment needs.
import { setTimeout as sleep } from 'node:timers/promises';
import type { BusinessModule, ModulePump, TaskContext } from '../module-contract.js';
import { describeError } from '../outcomes.js';

export interface ModulePumps {
  /** Settles once every loop has stopped. */
  readonly promise: Promise<void>;
  /** Starts no new round and waits for the rounds in flight (each bounded by its Stripe deadline). */
  stop(): Promise<void>;
}

export function startModulePumps(modules: readonly BusinessModule[], context: TaskContext): ModulePumps {
  const stopping = new AbortController();
  const loops: Array<Promise<void>> = [];
  for (const module of modules) {
    const logger = context.logger.child({ module: module.name });
    for (const [name, pump] of Object.entries(module.pumps?.({ ...context, logger }) ?? {})) {
      if (!name.startsWith(`${module.name}_`)) throw new Error(`pump ${name} of module ${module.name} must start with "${module.name}_"`);
      loops.push(runPump(pump, stopping.signal, (error) => logger.error({ pump: name, lastError: describeError(error) }, 'pump round failed')));
    }
  }
  const promise = Promise.all(loops).then(() => undefined);
  return {
    promise,
    async stop() {
      stopping.abort();
      await promise;
    },
  };
}

async function runPump(pump: ModulePump, signal: AbortSignal, failed: (error: unknown) => void): Promise<void> {
  while (!signal.aborted) {
    let next: 'more' | 'idle' = 'idle';
    try {
      next = await pump.pumpOnce();
    } catch (error) {
      failed(error);
    }
    if (next === 'idle') await sleep(pump.idleMs, undefined, { signal }).catch(() => {});
  }
}
