// The core's table and the business modules' (each declared beside its code,
// src/business-module.ts) read as one list of entries, so that loadConfig checks them in one pass
// that reports every problem of both.
import { settings, type Setting } from './settings.js';

/** A table of settings: the core's (./settings.ts), or a business module's own. */
export type SettingsTable = Readonly<Record<string, Setting>>;

/** A module's table, checked against `Setting` and keeping each entry's own schema type. */
export const defineSettings = <T extends SettingsTable>(table: T): T => table;

/** What loadConfig reads of a business module (src/business-module.ts): its name and its settings. */
export interface SettingsOwner {
  readonly name: string;
  readonly settings?: SettingsTable;
}

export interface Entry {
  /** The module whose table lists it; undefined for the core's. */
  readonly owner: string | undefined;
  readonly key: string;
  readonly setting: Setting;
}

/**
 * The core's entries, then each module's, in order. A variable several modules use (the refund
 * policy, Checkout's return pages) is one entry, declared once where it is owned and listed in the
 * table of each module that uses it: it is read once and given to each. Two different entries for
 * one variable are a mistake in the code, refused before anything is read.
 */
export function entriesOf(modules: readonly SettingsOwner[]): { entries: Entry[]; distinct: Setting[] } {
  const tables: Array<[string | undefined, SettingsTable]> = [
    [undefined, settings],
    ...modules.map((m): [string, SettingsTable] => [m.name, m.settings ?? {}]),
  ];
  const entries = tables.flatMap(([owner, table]) => Object.entries(table).map(([key, setting]) => ({ owner, key, setting })));
  const byEnv = new Map<string, Entry>();
  for (const entry of entries) {
    const first = byEnv.get(entry.setting.env);
    if (first && first.setting !== entry.setting) {
      const by = ({ owner, key }: Entry) => `${owner ?? 'the core'} (${key})`;
      throw new Error(`${entry.setting.env} is declared twice, by ${by(first)} and by ${by(entry)}: declare it once and list that entry in both tables`);
    }
    if (!first) byEnv.set(entry.setting.env, entry);
  }
  return { entries, distinct: [...byEnv.values()].map((entry) => entry.setting) };
}

/** Every variable the service reads (the core's, then each module's): docker-compose.yml and .env.example must list each. */
export function envVariables(modules: readonly SettingsOwner[] = []): readonly string[] {
  return Object.freeze(entriesOf(modules).distinct.map((setting) => setting.env));
}
