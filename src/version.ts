// The release this process runs, as its package.json names it. /healthz and the start line report
// it, so that during a rolling deploy the old container can be told from the new one.
import { readFileSync } from 'node:fs';

// From src/ in a checkout, from dist/src/ in the image (package.json sits beside dist/).
const CANDIDATES = ['../package.json', '../../package.json'];

function readVersion(): string {
  for (const candidate of CANDIDATES) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'stripe-inbox' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // Not there (the other layout): try the next.
    }
  }
  return 'unknown';
}

export const SERVICE_VERSION = readVersion();
