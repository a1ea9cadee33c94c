// Stripe's SDK, loaded from its CommonJS build: the same package, version and types.
//
// Why not `import Stripe from 'stripe'`: that resolves to the SDK's ES module build, which imports
// `node:http` as a module. Node builds an ES module's view of a built-in by reading every export,
// and node:http's WebSocket, CloseEvent and MessageEvent are lazy getters that load Node's bundled
// undici and http2 (nodejs/node#59686): several MB of resident memory, in every process, for APIs
// this service never calls. The CommonJS build uses require('http'), which leaves them unloaded.
// eslint.config.js keeps value imports of 'stripe' and 'node:http' out of src/ for that reason.
import { createRequire } from 'node:module';
import type StripeSdk from 'stripe';

export const Stripe = createRequire(import.meta.url)('stripe') as typeof StripeSdk;
export type Stripe = StripeSdk;
