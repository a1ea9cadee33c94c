// The wake a test's seed passes when nothing can wait for what it writes yet (an order or a
// subscription created and given its Checkout Session in one go, before any event names it). It
// also lets a seed run on a database migrated only as far as an older release (sql/0026 adds the
// wake's function): test/deploy/.
import type { Wake } from '../../src/events/event-waits.js';

export const noWaiters: Wake = () => Promise.resolve([]);
