// The shape every ops script shares: --help, --json, arguments checked at the edge with an
// error that names what is wrong, exit 0 on success, 1 on failure, 2 on bad usage.
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { describeError } from '../outcomes.js';
import { openDatabase, type Db } from '../db/database.js';
import { databaseUrlOrEmbedded } from '../db/embedded-postgres.js';
import { resolveDatabaseUrls } from '../db/connection-pooler.js';
import { createLogger, type Logger } from '../logger.js';

export class UsageError extends Error {}

export interface ScriptContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly json: boolean;
  /**
   * Opens DATABASE_DIRECT_URL when set, else DATABASE_URL (refused in transaction mode:
   * src/db/connection-pooler.ts), or in development the embedded Postgres (shared with a running npm start).
   */
  database(): Promise<Db>;
}

export interface ScriptResult {
  /** What --json prints. */
  json: unknown;
  /** What a person reads. */
  text: string;
  /** Exit code; 0 unless the result itself is a failure (e.g. an event that does not exist). */
  exitCode?: number;
}

export interface ScriptSpec<O extends NonNullable<ParseArgsConfig['options']>> {
  usage: string;
  options: O;
  positionals?: boolean;
  run(args: { values: Record<string, unknown>; positionals: string[] }, ctx: ScriptContext): Promise<ScriptResult>;
}

export function runScript<O extends NonNullable<ParseArgsConfig['options']>>(spec: ScriptSpec<O>): void {
  void main(spec).then((code) => {
    process.exitCode = code;
  });
}

/**
 * The usage text as this process was started. Usages are written as `npm run <script> --`, which
 * is right in a checkout (npm sets npm_lifecycle_event); the image has no npm scripts and runs
 * `node dist/scripts/<script>.js`, so there every `npm run x --` becomes that.
 */
function usageAsInvoked(usage: string, env: NodeJS.ProcessEnv = process.env, entry = process.argv[1] ?? ''): string {
  if (env.npm_lifecycle_event) return usage;
  const file = path.relative(process.cwd(), entry);
  const runner = file.endsWith('.ts') ? 'node --import tsx' : 'node';
  return usage.replace(/npm run ([\w-]+)(?: --)?/g, (_match, name: string) => `${runner} ${path.join(path.dirname(file), name + path.extname(file))}`);
}

async function main<O extends NonNullable<ParseArgsConfig['options']>>(spec: ScriptSpec<O>): Promise<number> {
  const usage = usageAsInvoked(spec.usage);
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      options: { ...spec.options, help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } },
      allowPositionals: spec.positionals ?? false,
      strict: true,
    });
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n\n${usage}\n`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const json = parsed.values.json === true;
  const closers: Array<() => Promise<void>> = [];
  try {
    const config = loadConfig();
    const logger = createLogger(config.logLevel, { fd: 2 });
    let db: Db | undefined;
    const ctx: ScriptContext = {
      config,
      logger,
      json,
      async database() {
        if (db) return db;
        const database = await databaseUrlOrEmbedded(config.databaseUrl, logger);
        closers.push(database.stop);
        // A script may migrate (an advisory lock) and prepares its statements: it needs a session.
        const { sessionUrl } = await resolveDatabaseUrls(database.url, config.databaseDirectUrl);
        const opened = openDatabase(sessionUrl, { maxConnections: 4, applicationName: 'stripe-inbox-script' });
        closers.unshift(() => opened.close());
        return (db = opened);
      },
    };
    const result = await spec.run(parsed, ctx);
    process.stdout.write(json ? `${JSON.stringify(result.json, null, 2)}\n` : `${result.text}\n`);
    return result.exitCode ?? 0;
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError) {
      process.stderr.write(`error: ${error.message}\n\n${usage}\n`);
      return 2;
    }
    process.stderr.write(`error: ${describeError(error)}\n`);
    return 1;
  } finally {
    for (const close of closers) await close().catch(() => {});
  }
}
