/** Plain-object paths (`a.b.c`) as the legacy converters read and write them. */
export type Plain = Record<string, unknown>;
export const isPlain = (value: unknown): value is Plain =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A path's keys, split once: the converters set and read the same few paths (from mappings and
 * profiles) on every record. Bounded, in case a caller ever passes paths without end.
 */
const splitPaths = new Map<string, readonly string[]>();
const MAX_SPLIT = 10_000;

export function keysOf(path: string): readonly string[] {
  let keys = splitPaths.get(path);
  if (!keys) {
    keys = path.split('.');
    if (splitPaths.size < MAX_SPLIT) splitPaths.set(path, keys);
  }
  return keys;
}

export function setPath(target: Plain, path: string, value: unknown): void {
  setKeys(target, keysOf(path), value);
}

/** `setPath` with the path already split (hot paths split it once). */
export function setKeys(target: Plain, keys: readonly string[], value: unknown): void {
  let node = target;
  for (let i = 0; i < keys.length - 1; i++) {
    const key = keys[i]!;
    let next = node[key];
    if (!isPlain(next)) node[key] = next = {};
    node = next as Plain;
  }
  node[keys.at(-1)!] = value;
}

export function getPath(source: unknown, path: string): unknown {
  return getKeys(source, keysOf(path));
}

/** `getPath` with the path already split. */
export function getKeys(source: unknown, keys: readonly string[]): unknown {
  let node = source;
  for (const key of keys) {
    if (!isPlain(node)) return undefined;
    node = node[key];
  }
  return node;
}
