import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { configSchema, type Config, ENVIRONMENTS } from './config/schema.js';
import { ENVIRONMENT_ORIGIN, fromEnvironment } from './config/environment.js';
import { checkNulBytes } from './config/nul-bytes.js';
import { unknownSettingMessage } from './config/replaced-settings.js';
import { exposedSecretFile } from './secret-files.js';
import { ConfigError, type ConfigProblem } from './operator-errors.js';
import { webhookProblems } from './events/subscriptions.js';
import { KINDS } from './records/index.js';
import { formatPath, PARSE_OPTIONS } from './records/issues.js';
import { FALLBACK_PROFILE, profileEntryProblems } from './records/legacy/onboarding.js';

/**
 * Configuration, loaded once at start-up and frozen. Layers, later wins:
 *   config/default.yaml → config/<environment>.yaml → $INGEST_CONFIG → environment variables
 *   (one per key, config/environment.ts).
 * Objects merge key by key; arrays and scalars replace. Every value remembers which layer set
 * it, so an error names the file (or variable) and the field to fix.
 */

export {
  configSchema,
  ENVIRONMENT_VARIABLES,
  ENVIRONMENTS,
  type Config,
  type Environment,
  type Tenant,
} from './config/schema.js';

/** Where the HTTP lineage journal lives: `lineage.directory`, else `<dataDirectory>/lineage`; relative to the working directory. */
export function lineageDirectory(config: Readonly<Config>): string {
  return path.resolve(config.lineage.directory ?? path.join(config.dataDirectory, 'lineage'));
}

/**
 * Local scratch space: copies of dropped files being processed, and the records of a large batch
 * waiting between its validation and its publishing (`<dataDirectory>/spool`).
 */
export function spoolDirectory(config: Readonly<Config>): string {
  return path.resolve(config.dataDirectory, 'spool');
}

/** Where a setting came from: a file path or `environment variable NAME`. */
type Origins = Map<string, string>;

type Plain = Record<string, unknown>;

function isPlainObject(value: unknown): value is Plain {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function mergeInto(
  target: Plain,
  layer: Plain,
  origin: string,
  origins: Origins,
  prefix: string,
): void {
  for (const [key, value] of Object.entries(layer)) {
    const at = prefix ? `${prefix}.${key}` : key;
    const current = target[key];
    if (isPlainObject(value) && isPlainObject(current)) {
      mergeInto(current, value, origin, origins, at);
    } else {
      target[key] = isPlainObject(value) ? structuredClone(value) : value;
      origins.set(at, origin);
      if (isPlainObject(value)) recordOrigins(value, origin, origins, at);
    }
  }
}

function recordOrigins(value: Plain, origin: string, origins: Origins, prefix: string): void {
  for (const [key, child] of Object.entries(value)) {
    const at = `${prefix}.${key}`;
    origins.set(at, origin);
    if (isPlainObject(child)) recordOrigins(child, origin, origins, at);
  }
}

function readYaml(file: string): Plain {
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(file, 'utf8'));
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'file not found'
        : (error as Error).message;
    throw new ConfigError([{ file, field: '(file)', message: reason.split('\n')[0] ?? reason }]);
  }
  if (parsed === null || parsed === undefined) return {};
  if (!isPlainObject(parsed))
    throw new ConfigError([
      { file, field: '(file)', message: 'Expected a YAML mapping at the top level' },
    ]);
  return parsed;
}

function fieldName(issuePath: ReadonlyArray<PropertyKey>): string {
  return issuePath.length === 0 ? '(root)' : formatPath(issuePath);
}

/** zod issues of a config or pipeline file as problems naming file and field; an unknown key is blamed on itself. */
export function issueProblems(
  issues: readonly z.core.$ZodIssue[],
  fileOf: (path: readonly PropertyKey[]) => string,
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const issue of issues) {
    const paths =
      issue.code === 'unrecognized_keys'
        ? issue.keys.map((key) => [...issue.path, key])
        : [issue.path];
    for (const at of paths) {
      const field = fieldName(at);
      const message =
        issue.code === 'unrecognized_keys' ? unknownSettingMessage(field) : issue.message;
      problems.push({ file: fileOf(at), field, message });
    }
  }
  return problems;
}

/** The layer that set the field, or the nearest enclosing object that some layer set. */
function originOf(
  issuePath: ReadonlyArray<PropertyKey>,
  origins: Origins,
  fallback: string,
): string {
  for (let length = issuePath.length; length > 0; length--) {
    const key = issuePath
      .slice(0, length)
      .filter((k) => typeof k !== 'number')
      .join('.');
    const origin = origins.get(key);
    if (origin) return origin;
  }
  return fallback;
}

export interface LoadConfigOptions {
  /** Folder holding default.yaml and the per-environment files. @default the package's config/ */
  configDirectory?: string;
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
  /**
   * Whether production requires `broker.url`. Commands that never publish (`status`, `lineage`,
   * `validate`) read the configuration for its folders and profiles only, and must run on a
   * production host whose broker secret is given to the service alone. @default true
   */
  brokerRequired?: boolean;
}

export const PACKAGE_CONFIG_DIRECTORY = fileURLToPath(new URL('../config/', import.meta.url));

export function loadConfig(options: LoadConfigOptions = {}): Readonly<Config> {
  const env = options.env ?? process.env;
  const directory = options.configDirectory ?? PACKAGE_CONFIG_DIRECTORY;
  const origins: Origins = new Map();
  const merged: Plain = {};
  const files: string[] = [];

  const defaultsFile = path.join(directory, 'default.yaml');
  const userFile = env.INGEST_CONFIG ? path.resolve(env.INGEST_CONFIG) : undefined;
  const user = userFile ? readYaml(userFile) : {};
  mergeInto(merged, readYaml(defaultsFile), defaultsFile, origins, '');
  files.push(defaultsFile);

  const variables = fromEnvironment(env);
  const envName =
    variables.settings.find(({ key }) => key === 'environment')?.layer.environment ??
    (typeof user.environment === 'string' ? user.environment : undefined) ??
    merged.environment;
  if (typeof envName === 'string' && (ENVIRONMENTS as readonly string[]).includes(envName)) {
    const envFile = path.join(directory, `${envName}.yaml`);
    if (existsSync(envFile)) {
      mergeInto(merged, readYaml(envFile), envFile, origins, '');
      files.push(envFile);
    }
  }
  // Every problem is reported in one run: an exposed file is one more, not the end of the checks.
  const problems: ConfigProblem[] = [];
  if (userFile) {
    const exposed = holdsSecrets(user) ? exposedSecretFile(userFile) : undefined;
    if (exposed) problems.push({ file: userFile, field: '(file)', message: exposed });
    mergeInto(merged, user, userFile, origins, '');
    files.push(userFile);
  }
  problems.push(...variables.problems);
  for (const { layer, origin } of variables.settings) mergeInto(merged, layer, origin, origins, '');

  const fileOf = (at: readonly PropertyKey[]) => originOf(at, origins, defaultsFile);
  const nul = checkNulBytes(merged, fileOf);
  problems.push(...nul.problems);
  const result = configSchema.safeParse(merged, PARSE_OPTIONS);
  if (!result.success) {
    problems.push(...issueProblems(nul.others(result.error.issues), fileOf));
  } else if (nul.problems.length === 0) {
    problems.push(
      ...crossFieldProblems(result.data, origins, defaultsFile, options.brokerRequired ?? true),
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const config = result.data!;
  config.pipelinesDirectory = resolveFrom(
    originOf(['pipelinesDirectory'], origins, defaultsFile),
    config.pipelinesDirectory,
    directory,
  );
  deepFreeze(config);
  CONFIG_FILES.set(config, Object.freeze(files));
  return config;
}

const CONFIG_FILES = new WeakMap<object, readonly string[]>();

/** The files `loadConfig` read to make this configuration, in layer order (for the start-up line). */
export function configFilesOf(config: Readonly<Config>): readonly string[] {
  return CONFIG_FILES.get(config) ?? [];
}

/**
 * A relative folder in a configuration file is relative to that file's folder, so the service
 * finds the same pipelines whatever its working directory; the packaged files (config/) speak
 * of the package's own folders (`pipelines` = `<package>/pipelines`). From an environment
 * variable, relative to the working directory.
 */
function resolveFrom(origin: string, value: string, configDirectory: string): string {
  if (path.isAbsolute(value)) return value;
  if (origin.startsWith(ENVIRONMENT_ORIGIN)) return path.resolve(value);
  const folder = path.dirname(origin);
  const packaged = path.resolve(folder) === path.resolve(configDirectory);
  return path.resolve(packaged ? path.dirname(path.resolve(configDirectory)) : folder, value);
}

/** Tenants' key hashes (a stolen hash can be brute-forced offline) or a broker password. */
function holdsSecrets(layer: Plain): boolean {
  const broker = layer.broker;
  const shared = layer.sharedState;
  const redis = isPlainObject(shared) && isPlainObject(shared.redis) ? shared.redis : {};
  const brokerUrls = isPlainObject(broker) ? [broker.url].flat() : [];
  const urls = [
    ...brokerUrls.map((url) => (typeof url === 'string' ? url : '')),
    typeof redis.url === 'string' ? redis.url : '',
  ];
  return (
    (Array.isArray(layer.tenants) && layer.tenants.length > 0) ||
    urls.some((url) => /^[a-z]+:\/\/[^/@]*:[^/@]*@/i.test(url))
  );
}

function crossFieldProblems(
  config: Config,
  origins: Origins,
  fallback: string,
  brokerRequired: boolean,
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const seen = new Set<string>();
  config.tenants.forEach((tenant, index) => {
    if (seen.has(tenant.businessId)) {
      problems.push({
        file: originOf(['tenants'], origins, fallback),
        field: `tenants[${index}].businessId`,
        message: `Duplicate business id "${tenant.businessId}"`,
      });
    }
    seen.add(tenant.businessId);
  });
  const businesses = new Set(config.tenants.map((tenant) => tenant.businessId));
  for (const [businessId, profile] of Object.entries(config.onboarding)) {
    const file = originOf(['onboarding', businessId], origins, fallback);
    // The packaged files carry the demo profile, which need not match the operator's tenants.
    const packaged = file.startsWith(path.resolve(PACKAGE_CONFIG_DIRECTORY));
    if (
      businessId !== FALLBACK_PROFILE &&
      !businesses.has(businessId) &&
      config.environment !== 'sandbox' &&
      !packaged
    ) {
      problems.push({
        file,
        field: `onboarding.${businessId}`,
        message: `No tenant has business id "${businessId}"`,
      });
    }
    for (const [kind, entries] of Object.entries(profile)) {
      if (kind === 'legacy') continue; // options, checked by the schema
      for (const [path, value] of Object.entries(entries ?? {})) {
        for (const message of profileEntryProblems(
          KINDS[kind as keyof typeof KINDS],
          path,
          value,
        )) {
          problems.push({ file, field: `onboarding.${businessId}.${kind}["${path}"]`, message });
        }
      }
    }
  }
  if (brokerRequired && config.environment === 'production' && !config.broker.url) {
    problems.push({
      file: 'environment',
      field: 'broker.url',
      message:
        'Required in production: set AMQP_URL (the embedded publisher is for development only)',
    });
  }
  for (const { field, message } of webhookProblems(config))
    problems.push({ file: originOf(['tenants'], origins, fallback), field, message });
  if (config.broker.reconnect.maxDelayMs < config.broker.reconnect.initialDelayMs) {
    problems.push({
      file: originOf(['broker', 'reconnect', 'maxDelayMs'], origins, fallback),
      field: 'broker.reconnect.maxDelayMs',
      message: 'Must be at least broker.reconnect.initialDelayMs',
    });
  }
  problems.push(...sentinelProblems(config, origins, fallback));
  return problems;
}

/** Sentinels need the master's name, and name where Redis is instead of a URL, never beside one. */
function sentinelProblems(config: Config, origins: Origins, fallback: string): ConfigProblem[] {
  const { url, sentinels, masterName, username, db } = config.sharedState.redis;
  // A problem is blamed on the layer that set `from` (a missing field: the one that asks for it,
  // often an environment variable), never on the file that only set the fields around it.
  const at = (key: string, from = key) => ({
    file: originOf(['sharedState', 'redis', from], origins, fallback),
    field: `sharedState.redis.${key}`,
  });
  if (sentinels && url)
    return [
      { ...at('sentinels'), message: 'Set either url or sentinels (with masterName), not both' },
    ];
  if (sentinels && !masterName)
    return [
      {
        ...at('masterName', 'sentinels'),
        message:
          'Required with sentinels: the name the sentinels monitor (environment variable REDIS_SENTINEL_MASTER)',
      },
    ];
  if (masterName && !sentinels)
    return [
      { ...at('masterName'), message: 'Only used with sentinels: set sentinels too, or remove it' },
    ];
  // With a URL, the user and the database number are the URL's: a second place would disagree.
  const urlParts = { username: 'redis://user:password@host', db: 'redis://host:6379/<db>' };
  return (['username', 'db'] as const)
    .filter((key) => !sentinels && (key === 'db' ? db !== undefined : username !== undefined))
    .map((key) => ({
      ...at(key),
      message: `Only used with sentinels: with url, put it in the URL (${urlParts[key]})`,
    }));
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
