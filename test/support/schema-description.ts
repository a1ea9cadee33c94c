// The database's schema after every migration (ours and graphile-worker's), as text a reviewer can
// read in a diff: tables and views with their columns, constraints, indexes and triggers, then
// functions and composite types by signature. Read from the catalog rather than pg_dump, so the
// same schema reads the same on every supported Postgres major (pg_dump's output and client
// version vary with it). NOT NULL constraints, which Postgres 18 also lists as constraints, show
// as the columns' `not null`. A header first says who owns each of our tables: the module whose
// `tables` names it (src/modules/*/index.ts), else the core; graphile-worker owns its schema.
import { sql, type Kysely } from 'kysely';
import type { BusinessModule } from '../../src/business-module.js';
import type { Database } from '../../src/db/schema.js';

/** Our tables (schema public), each with its owner: a module that declares it, else the core. */
export async function tableOwners(db: Kysely<Database>, modules: readonly Pick<BusinessModule, 'name' | 'tables'>[]): Promise<Array<[string, string]>> {
  const { rows } = await sql<{ name: string }>`select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p') order by c.relname collate "C"`.execute(db);
  return rows.map(({ name }): [string, string] => [name, modules.find((m) => m.tables?.includes(name))?.name ?? 'core']);
}

export async function describeSchema(db: Kysely<Database>, modules: readonly Pick<BusinessModule, 'name' | 'tables'>[]): Promise<string> {
  const owners = await tableOwners(db, modules);
  const width = Math.max(...owners.map(([name]) => name.length));
  const header = [
    '-- Who owns each table of ours: the module whose `tables` names it (src/modules/*/index.ts), else the core.',
    "-- Its code is the table's only writer and its migrations change it (docs/migrations.md).",
    ...owners.map(([name, owner]) => `--   ${name.padEnd(width)}  ${owner}`),
  ];
  const { rows } = await sql<{ line: string }>`
    with rel as (
      select c.oid, n.nspname, c.relname, c.relkind from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname in ('public', 'graphile_worker') and c.relkind in ('r', 'v', 'p')
    )
    select line from (
      select rel.nspname || '.' || rel.relname || case rel.relkind when 'v' then ' (view)' else '' end || E'\\n' ||
        (select string_agg('  ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || case when a.attnotnull then ' not null' else '' end ||
                coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), ''), E'\\n' order by a.attnum)
         from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
         where a.attrelid = rel.oid and a.attnum > 0 and not a.attisdropped) ||
        coalesce(E'\\n' || (select string_agg('  constraint ' || co.conname || ' ' || pg_get_constraintdef(co.oid), E'\\n' order by co.conname collate "C")
                  from pg_constraint co where co.conrelid = rel.oid and co.contype <> 'n'), '') ||
        coalesce(E'\\n' || (select string_agg('  ' || pg_get_indexdef(i.indexrelid), E'\\n' order by i.indexrelid::regclass::text collate "C") from pg_index i where i.indrelid = rel.oid), '') ||
        coalesce(E'\\n' || (select string_agg('  ' || pg_get_triggerdef(t.oid), E'\\n' order by t.tgname collate "C") from pg_trigger t where t.tgrelid = rel.oid and not t.tgisinternal), '')
        as line, 1 as kind, rel.nspname || '.' || rel.relname as sort
      from rel
      union all
      select 'function ' || n.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') returns ' || pg_get_function_result(p.oid),
             2, n.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid)
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname in ('public', 'graphile_worker')
      union all
      select 'type ' || n.nspname || '.' || t.typname || ' (' ||
             (select string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' order by a.attnum) from pg_attribute a where a.attrelid = t.typrelid and a.attnum > 0) || ')',
             3, n.nspname || '.' || t.typname
      from pg_type t join pg_namespace n on n.oid = t.typnamespace join pg_class c on c.oid = t.typrelid
      where n.nspname in ('public', 'graphile_worker') and c.relkind = 'c'
    ) described
    order by kind, sort collate "C"`.execute(db);
  return `${[...header, ...rows.map((r) => r.line)].join('\n')}\n`;
}
