import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { ConfigProblem } from '../operator-errors.js';
import { exposedSecretFile } from '../secret-files.js';
import { configSchema, ENVIRONMENT_VARIABLES } from './schema.js';

/**
 * Environment variables: one for every configuration key, derived from the schema, so a key
 * added to the schema gets its variable (and its row in docs/configuration.md) without more code.
 *
 * The rule: `INGEST_` + the key's path, each part in upper snake case, parts joined by `__`
 * (`http.abuse.rateLimit.requests` → `INGEST_HTTP__ABUSE__RATE_LIMIT__REQUESTS`). The short names
 * of the operator contract (`PORT`, `AMQP_URL`, … in ENVIRONMENT_VARIABLES) keep working as
 * aliases. Numbers and booleans are read as such; lists and maps (tenants, queues, onboarding) as
 * JSON, a list of strings (Redis sentinels) also as `a,b`. An empty variable counts as unset. A secret (`broker.url`, `tenants`) may instead be
 * given as `<NAME>_FILE`, the path of a file holding it (a mounted Docker or Kubernetes secret):
 * read at start-up, one trailing newline dropped, refused when it is not private (src/secret-files.ts).
 */

export type ValueType = 'string' | 'number' | 'boolean' | 'list' | 'json';

export interface EnvironmentVariable {
  /** The name by the rule, e.g. `INGEST_HTTP__PORT`. */
  readonly name: string;
  /** The key it sets, e.g. `http.port`. */
  readonly key: string;
  readonly type: ValueType;
  /** Older short names that set the same key, e.g. `PORT`. */
  readonly aliases: readonly string[];
  /** Whether `<name>_FILE` (and `<alias>_FILE`) may name a file holding the value. */
  readonly secret: boolean;
}

/** Keys whose values are secrets (a broker password, key hashes): they also take `_FILE`. */
const SECRET_KEYS: ReadonlySet<string> = new Set(['broker.url', 'history.url', 'tenants']);

interface JsonNode {
  type?: string;
  anyOf?: JsonNode[];
  properties?: Record<string, JsonNode>;
  items?: JsonNode;
  enum?: unknown[];
}

function upperSnake(part: string): string {
  return part.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

/** The variable name for a key path by the rule. */
export function variableName(path: readonly string[]): string {
  return `INGEST_${path.map(upperSnake).join('__')}`;
}

function valueType(node: JsonNode): ValueType {
  // A key that takes a string or a list (`broker.url`): the variable is the string form.
  if (node.anyOf?.some((branch) => branch.type === 'string')) return 'string';
  if (node.type === 'integer' || node.type === 'number') return 'number';
  if (node.type === 'boolean') return 'boolean';
  if (node.type === 'string' || node.enum?.every((value) => typeof value === 'string'))
    return 'string';
  if (node.type === 'array' && node.items?.type === 'string') return 'list';
  return 'json';
}

function leaves(node: JsonNode, path: string[]): EnvironmentVariable[] {
  if (node.type === 'object' && node.properties)
    return Object.entries(node.properties).flatMap(([key, child]) => leaves(child, [...path, key]));
  const key = path.join('.');
  return [
    {
      name: variableName(path),
      key,
      type: valueType(node),
      aliases: Object.entries(ENVIRONMENT_VARIABLES)
        .filter(([, aliased]) => aliased === key)
        .map(([alias]) => alias),
      secret: SECRET_KEYS.has(key),
    },
  ];
}

let table: readonly EnvironmentVariable[] | undefined;

/** Every configuration key's variable, in schema order. */
export function environmentVariables(): readonly EnvironmentVariable[] {
  table ??= Object.freeze(leaves(z.toJSONSchema(configSchema, { io: 'input' }) as JsonNode, []));
  return table;
}

type Plain = Record<string, unknown>;

export interface EnvironmentSetting {
  /** One key as a configuration layer, e.g. `{ http: { port: 8080 } }`. */
  readonly layer: Plain;
  /** The key, e.g. `http.port`. */
  readonly key: string;
  /** `environment variable PORT`: what error messages name as the origin. */
  readonly origin: string;
}

export interface EnvironmentLayer {
  /** One per key set, in schema order. */
  readonly settings: readonly EnvironmentSetting[];
  readonly problems: readonly ConfigProblem[];
}

/** How an error names a variable as the place a setting came from. */
export const ENVIRONMENT_ORIGIN = 'environment variable';
const origin = (name: string) => `${ENVIRONMENT_ORIGIN} ${name}`;

/** One trailing newline is what `echo` and editors add; anything else is kept as written. */
function readSecretFile(file: string): string {
  return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
}

function convert(text: string, type: ValueType): { value: unknown } | { error: string } {
  switch (type) {
    case 'number':
      return { value: /^-?\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : text };
    case 'boolean':
      return { value: text === 'true' ? true : text === 'false' ? false : text };
    case 'list':
      // `a:1,b:2` as operators write it; a JSON array too, as for every other list.
      if (!text.trim().startsWith('['))
        return { value: text.split(',').map((item) => item.trim()) };
      return convert(text, 'json');
    case 'json':
      try {
        return { value: JSON.parse(text) };
      } catch {
        return {
          error: 'Expected JSON (a list or an object), as the reference shows for this key',
        };
      }
    default:
      return { value: text };
  }
}

function layerOf(path: readonly string[], value: unknown): Plain {
  return path.reduceRight<Plain>((inner, part) => ({ [part]: inner }), value as Plain);
}

/** The names that are not configuration keys but are read: the file layer's path. */
const OTHER_NAMES: readonly string[] = ['INGEST_CONFIG'];

/** Every name this service reads, each with the key it sets (`INGEST_CONFIG` sets none). */
function knownNames(): ReadonlyMap<string, string | undefined> {
  const known = new Map<string, string | undefined>(OTHER_NAMES.map((name) => [name, undefined]));
  for (const variable of environmentVariables())
    for (const name of [variable.name, ...variable.aliases]) {
      known.set(name, variable.key);
      if (variable.secret) known.set(`${name}_FILE`, variable.key);
    }
  return known;
}

/** Edits (insert, delete, substitute) from one name to another: how far a typo is. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    previous = current;
  }
  return previous[b.length]!;
}

function closest(name: string, known: ReadonlyMap<string, string | undefined>): string {
  let best = '';
  for (const candidate of known.keys())
    if (best === '' || distance(name, candidate) < distance(name, best)) best = candidate;
  const key = known.get(best);
  return key === undefined ? best : `${best} (${key})`;
}

/**
 * A variable that looks meant for this service but sets nothing: any `INGEST_*` name that is not a
 * key's, and `<NAME>_FILE` for a key that takes no file (only secrets do). Refused rather than
 * ignored, or a typo silently leaves the default in force. Other names are the environment's own
 * (`PATH`, a pipeline's `{ env: NAME }` secrets), so `INGEST_` is reserved for configuration.
 */
function unknownVariables(env: NodeJS.ProcessEnv): ConfigProblem[] {
  const known = knownNames();
  const problems: ConfigProblem[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value === '' || known.has(name)) continue; // empty counts as unset
    const base = name.endsWith('_FILE') ? name.slice(0, -'_FILE'.length) : undefined;
    const baseKey = base === undefined ? undefined : known.get(base);
    if (base !== undefined && baseKey !== undefined)
      problems.push({
        file: origin(name),
        field: baseKey,
        message: `${base} takes no _FILE variant (only the secrets broker.url, history.url and tenants are read from files): set ${base} itself${baseKey === 'sharedState.redis.url' ? ', and its password from a file with INGEST_SHARED_STATE__REDIS__PASSWORD_FILE' : ''}`,
      });
    else if (name.startsWith('INGEST_'))
      problems.push({
        file: origin(name),
        field: '(name)',
        message: `Not a configuration variable; the closest is ${closest(name, known)}`,
      });
  }
  return problems;
}

/**
 * The variables that are set, as a layer over the files. Every problem (an unknown `INGEST_*` or
 * `_FILE` name, unreadable or exposed `_FILE`, two variables disagreeing on one key, malformed
 * JSON) is reported, none stops the rest.
 */
export function fromEnvironment(env: NodeJS.ProcessEnv): EnvironmentLayer {
  const settings: EnvironmentSetting[] = [];
  const problems: ConfigProblem[] = unknownVariables(env);
  for (const variable of environmentVariables()) {
    const given: Array<{ from: string; text: string }> = [];
    for (const name of [variable.name, ...variable.aliases]) {
      const direct = env[name];
      if (direct !== undefined && direct !== '') given.push({ from: name, text: direct });
      const file = variable.secret ? env[`${name}_FILE`] : undefined;
      if (file === undefined || file === '') continue;
      const from = `${name}_FILE`;
      try {
        const exposed = exposedSecretFile(file);
        if (exposed) {
          problems.push({ file: origin(from), field: variable.key, message: exposed });
          continue;
        }
        const text = readSecretFile(file);
        if (text === '')
          problems.push({ file: origin(from), field: variable.key, message: `${file} is empty` });
        else given.push({ from, text });
      } catch (error) {
        problems.push({
          file: origin(from),
          field: variable.key,
          message: `Cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
        });
      }
    }
    const [first, ...rest] = given;
    if (!first) continue;
    const disagreeing = rest.filter(({ text }) => text !== first.text);
    if (disagreeing.length > 0) {
      // Never the values: one of them may be a secret.
      problems.push({
        file: origin(first.from),
        field: variable.key,
        message: `${[first, ...disagreeing].map(({ from }) => from).join(' and ')} are both set, to different values: keep one`,
      });
      continue;
    }
    const converted = convert(first.text, variable.type);
    if ('error' in converted) {
      problems.push({ file: origin(first.from), field: variable.key, message: converted.error });
      continue;
    }
    settings.push({
      layer: layerOf(variable.key.split('.'), converted.value),
      key: variable.key,
      origin: origin(first.from),
    });
  }
  return { settings, problems };
}
