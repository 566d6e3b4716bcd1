/**
 * Renders a JSON Schema (as `z.toJSONSchema` prints it) as Markdown reference tables: one table
 * per object, one row per field (key, type, default, environment variable, description). Nested
 * objects and the objects of lists get their own table, named by their path.
 */

export type JsonSchema = {
  type?: string;
  title?: string;
  description?: string;
  default?: unknown;
  examples?: unknown[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  minItems?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: boolean | JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
};

export interface TableOptions {
  /** A field's default, when the schema itself does not hold it (the config's are in default.yaml). */
  defaultOf?: (path: string) => unknown;
  /** The environment variables that set a field, if any (adds a column). */
  envOf?: (path: string) => readonly string[];
  /** Heading level of each table's heading. */
  level: number;
}

const SAFE_INTEGER = 2 ** 53 - 1;

function code(value: unknown): string {
  const text = typeof value === 'string' && value !== '' ? value : JSON.stringify(value);
  return `\`${text}\``;
}

function isObject(node: JsonSchema): boolean {
  return node.type === 'object' && node.properties !== undefined;
}

/** A short type for a table cell. */
export function typeOf(node: JsonSchema): string {
  const variants = node.oneOf ?? node.anyOf;
  if (variants)
    return variants
      .map((variant) =>
        isObject(variant)
          ? `{ ${Object.keys(variant.properties ?? {}).join(', ')} }`
          : typeOf(variant),
      )
      .join(' or ');
  if (node.const !== undefined) return code(node.const);
  if (node.enum) return node.enum.map(code).join(' \\| ');
  if (node.type === 'array')
    return node.items && isObject(node.items)
      ? 'list of objects'
      : `list of ${typeOf(node.items ?? {})}`;
  if (node.type === 'object') return node.properties ? 'object' : 'map';
  if (node.type === 'integer' || node.type === 'number') {
    const min =
      node.minimum !== undefined && node.minimum > -SAFE_INTEGER ? node.minimum : undefined;
    const max =
      node.maximum !== undefined && node.maximum < SAFE_INTEGER ? node.maximum : undefined;
    const bounds = [
      node.exclusiveMinimum !== undefined ? `> ${node.exclusiveMinimum}` : undefined,
      min !== undefined && max !== undefined ? `${min}–${max}` : undefined,
      min !== undefined && max === undefined ? `≥ ${min}` : undefined,
      max !== undefined && min === undefined ? `≤ ${max}` : undefined,
    ].filter((bound) => bound !== undefined);
    return [node.type, ...bounds].join(' ');
  }
  return node.type ?? 'any';
}

/** Markdown heading text → the anchor GitHub gives it. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Table cell text: pipes escaped, and `docs/<page>.md#<anchor>` mentions turned into links between pages. */
function cell(text: string): string {
  return text
    .replace(/\|/g, '\\|')
    .replace(/\n/g, ' ')
    .replace(/\bdocs\/([a-z0-9-]+\.md)(#[a-z0-9-]+)?/g, (_all, page: string, anchor = '') =>
      page === 'configuration.md' ? `[below](${anchor})` : `[${page}${anchor}](${page}${anchor})`,
    );
}

function nestedObject(node: JsonSchema): JsonSchema | undefined {
  if (isObject(node)) return node;
  if (node.type === 'array' && node.items && isObject(node.items)) return node.items;
  return undefined;
}

/** The tables of `node` (an object schema) and of every object under it, depth first. */
export function tables(node: JsonSchema, path: string, options: TableOptions): string[] {
  const out: string[] = [];
  const properties = node.properties ?? {};
  const required = new Set(node.required ?? []);
  const withEnv = options.envOf !== undefined;
  const rows = [
    `| Key | Type | Default |${withEnv ? ' Env |' : ''} Description |`,
    `|---|---|---|${withEnv ? '---|' : ''}---|`,
  ];
  const nested: Array<[string, JsonSchema]> = [];
  for (const [key, child] of Object.entries(properties)) {
    const at = path ? `${path}.${key}` : key;
    const inner = nestedObject(child);
    const childPath = child.type === 'array' ? `${at}[]` : at;
    if (inner) nested.push([childPath, { ...inner, description: child.description }]);
    const value = child.default ?? options.defaultOf?.(at);
    const defaultText =
      inner && child.type !== 'array'
        ? ''
        : value !== undefined
          ? code(value)
          : required.has(key)
            ? 'required'
            : '—';
    const examples =
      !inner && child.examples?.length ? ` Example: ${child.examples.map(code).join(', ')}.` : '';
    const text = inner
      ? `See [${childPath}](#${slug(childPath)}).`
      : cell(`${child.description ?? ''}${examples}`);
    const envNames = inner && child.type !== 'array' ? [] : (options.envOf?.(at) ?? []);
    const env = withEnv ? ` ${envNames.map(code).join(', ')} |` : '';
    rows.push(`| \`${key}\` | ${typeOf(child)} | ${cell(defaultText)} |${env} ${text} |`);
  }
  const title = path || node.title || '(top level)';
  const intro = node.description ? `${cell(node.description)}\n\n` : '';
  out.push(`${'#'.repeat(options.level)} ${title}\n\n${intro}${rows.join('\n')}\n`);
  for (const [childPath, inner] of nested) out.push(...tables(inner, childPath, options));
  return out;
}
