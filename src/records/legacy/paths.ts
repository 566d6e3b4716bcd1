/** Plain-object paths (`a.b.c`) as the legacy converters read and write them. */
export type Plain = Record<string, unknown>;
export const isPlain = (value: unknown): value is Plain =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function setPath(target: Plain, path: string, value: unknown): void {
  const keys = path.split('.');
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
  let node = source;
  for (const key of path.split('.')) {
    if (!isPlain(node)) return undefined;
    node = node[key];
  }
  return node;
}
