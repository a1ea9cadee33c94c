// docs/openapi.json as the tests hold the service to it. Every answer the test service's helpers
// receive (test/support/service.ts) from an operation the document describes, and every
// notification the test receiver verifies (test/support/notification-receiver.ts), is validated
// against its schema: a status the operation does not describe, or a body its schema refuses,
// fails the test that received it. JSON Schema 2020-12, as OpenAPI 3.1 uses it, by ajv (eslint's
// ajv is version 6, which knows only draft-07); strict about required fields and types, open to
// members the document does not list unless it says otherwise.
import { appendFileSync, readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: under Node's ESM its function is the default export's own default.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

interface Response {
  content?: Record<string, { schema?: object }>;
}
type Reference = { $ref: string };
interface Operation {
  responses: Record<string, Response | Reference>;
}
export interface OpenApiDocument {
  openapi: string;
  info: { version: string };
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, { post: { requestBody: Response | Reference } }>;
  components: { schemas: Record<string, object>; responses: Record<string, Response>; requestBodies: Record<string, Response> };
}

export const openApi = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')) as OpenApiDocument;

// The document's schemas under one $id, so that a schema anywhere in it refers to them by an
// absolute reference: ajv reads a schema, not an OpenAPI document.
const SCHEMAS_ID = 'openapi.json';
const asSchema = (schema: object): object => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${SCHEMAS_ID}#/$defs/`)) as object;

const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
addFormats(ajv);
ajv.addSchema({ $id: SCHEMAS_ID, $defs: asSchema(openApi.components.schemas) });

/** Compiles every schema of the components: a keyword ajv does not know, or a dangling $ref, throws. */
export function compileComponents(): number {
  for (const name of Object.keys(openApi.components.schemas)) ajv.getSchema(`${SCHEMAS_ID}#/$defs/${name}`);
  return Object.keys(openApi.components.schemas).length;
}

const compiled = new Map<string, ValidateFunction>();
function validator(key: string, schema: object): ValidateFunction {
  let validate = compiled.get(key);
  if (!validate) compiled.set(key, (validate = ajv.compile(asSchema(schema))));
  return validate;
}

/** A response or request body of the document, its `#/components/<kind>/<name>` followed. */
function resolve(value: Response | Reference): Response {
  if (!('$ref' in value)) return value;
  const [, kind, name] = /^#\/components\/(responses|requestBodies)\/(.+)$/.exec(value.$ref) ?? [];
  const found = kind && name ? openApi.components[kind as 'responses' | 'requestBodies'][name] : undefined;
  if (!found) throw new Error(`docs/openapi.json: ${value.$ref} names no response or request body`);
  return found;
}

const templates = Object.keys(openApi.paths).map((template) => ({
  template,
  pattern: new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`),
}));

/** The described path a request's path (query string and all) falls under, or undefined. */
export function describedPath(path: string): string | undefined {
  const bare = path.split('?')[0]!;
  return openApi.paths[bare] ? bare : templates.find((t) => t.pattern.test(bare))?.template;
}

/** What the process validated: for the figures (OPENAPI_TALLY_FILE, below). */
const tally = { responses: 0, notifications: 0, checked: new Set<string>() };

/**
 * Validates an answer of the service against the document: nothing when its operation is not
 * described (another route, a method the route has not), an error when the operation does not
 * describe its status or its body does not match.
 */
export function checkResponse(method: string, path: string, status: number, body: unknown): void {
  const template = describedPath(path);
  const operation = template === undefined ? undefined : openApi.paths[template]![method.toLowerCase()];
  if (!operation) return;
  const name = `${method.toUpperCase()} ${template}`;
  const described = operation.responses[String(status)] ?? operation.responses[`${String(status)[0]}XX`] ?? operation.responses.default;
  if (!described) throw new Error(`${name} answered ${status}, which docs/openapi.json does not describe: ${JSON.stringify(body)}`);
  const schema = resolve(described).content?.['application/json']?.schema;
  if (!schema) return;
  const validate = validator(`${name} ${status}`, schema);
  if (!validate(body)) {
    throw new Error(`${name} answered ${status} with a body docs/openapi.json refuses: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`);
  }
  tally.responses++;
  tally.checked.add(`${name} ${status}`);
}

/** Why a notification's body does not match its type's schema under `webhooks`, or undefined. */
export function notificationProblem(body: { type: string }): string | undefined {
  const { type } = body;
  const schema = Object.hasOwn(openApi.webhooks, type) ? resolve(openApi.webhooks[type]!.post.requestBody).content?.['application/json']?.schema : undefined;
  if (!schema) return `notification type ${type} is not under docs/openapi.json's webhooks`;
  const validate = validator(`webhook ${type}`, schema);
  if (!validate(body)) return `a ${type} notification docs/openapi.json refuses: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`;
  tally.notifications++;
  tally.checked.add(`webhook ${type}`);
  return undefined;
}

// The figures of a run: with OPENAPI_TALLY_FILE set, each test process adds a line of what it
// validated (npm test runs every file in its own process).
const tallyFile = process.env.OPENAPI_TALLY_FILE;
if (tallyFile) {
  process.on('exit', () => {
    if (tally.responses + tally.notifications === 0) return;
    appendFileSync(tallyFile, `${JSON.stringify({ responses: tally.responses, notifications: tally.notifications, checked: [...tally.checked] })}\n`);
  });
}
