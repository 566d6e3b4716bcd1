// Summarises a V8 .cpuprofile (node --cpu-prof): self time per function and per package,
// as a share of the busy (non-idle) time, plus the total (inclusive) time of our own functions.
import { readFileSync } from 'node:fs';

function place(url) {
  if (!url) return '';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url);
  if (pkg) return `${pkg[1]}/${pkg[2]}`;
  const own = /\/(dist|bench)\/(.*)$/.exec(url);
  if (own) return `${own[1]}/${own[2]}`;
  return url.replace(/^file:\/\//, '');
}

function area(url, functionName) {
  if (!url)
    return functionName.startsWith('(') ? functionName : '(native: V8 builtins, JSON, crypto...)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  if (/\/dist\//.test(url)) return 'warehouse-ingest (dist/)';
  if (/\/bench\//.test(url)) return 'bench/';
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/').slice(0, 2).join('/')}`;
  return url;
}

export function summarise(file, top = 15) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const selfUs = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
  }
  const keyOf = ({ functionName, url, lineNumber }) =>
    `${functionName || '(anonymous)'} ${place(url)}${url ? `:${lineNumber + 1}` : ''}`;
  const byFunction = new Map();
  const byArea = new Map();
  let busy = 0;
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    const { functionName, url } = node.callFrame;
    if (!us || functionName === '(idle)') continue;
    busy += us;
    byFunction.set(keyOf(node.callFrame), (byFunction.get(keyOf(node.callFrame)) ?? 0) + us);
    const a = area(url, functionName || '(anonymous)');
    byArea.set(a, (byArea.get(a) ?? 0) + us);
  }

  // Total (inclusive) time of our own functions (dist/, bench/): where a request's time goes.
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const inclusive = new Map();
  const walk = (node, open) => {
    let total = selfUs.get(node.id) ?? 0;
    const key = keyOf(node.callFrame);
    const own =
      /\/(dist|bench)\//.test(node.callFrame.url) &&
      !node.callFrame.url.includes('node_modules') &&
      !open.has(key);
    if (own) open.add(key);
    for (const child of node.children ?? []) total += walk(byId.get(child), open);
    if (own) {
      open.delete(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + total);
    }
    return total;
  };
  walk(profile.nodes[0], new Set());
  const rows = (map, n) =>
    [...map]
      .sort((x, y) => y[1] - x[1])
      .slice(0, n)
      .map(([what, us]) => ({
        what,
        ms: Math.round(us / 1000),
        percent: Math.round((1000 * us) / busy) / 10,
      }));
  return {
    busyMs: Math.round(busy / 1000),
    functions: rows(byFunction, top),
    areas: rows(byArea, 12),
    own: rows(inclusive, top),
  };
}
