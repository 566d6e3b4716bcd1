import http from 'node:http';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { type Output, parse } from './check-commands.js';
import { UsageError } from './help.js';

/** The admin listener's address as the service reads it (`admin.host`, `admin.port`). */
export interface AdminAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * Where a probe on the same host reaches the admin listener's /healthz. That listener is plain
 * HTTP whatever `http.tls` says (src/main.ts), so the probe needs no certificate and works the same
 * with and without TLS on the partner-facing port. A wildcard address is reached on loopback.
 */
export function healthzUrl(address: AdminAddress): string {
  return adminUrl(address, '/healthz');
}

/** A path on the admin listener, as a probe on the same host reaches it. */
export function adminUrl({ host, port }: AdminAddress, path: string): string {
  const reachable = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}${path}`;
}

/** The broker node the running service's publisher is on, from its `/readyz`; or why it is not known. */
export async function serviceBrokerNode(
  address: AdminAddress,
  timeoutMs: number,
): Promise<{ node: string } | { unknown: string }> {
  const url = adminUrl(address, '/readyz');
  const answer = await getText(url, timeoutMs);
  if (typeof answer === 'string') return { unknown: `no service answered at ${url}: ${answer}` };
  if (answer.status !== 200)
    return { unknown: `the service at ${url} is not ready (${answer.status}): not connected` };
  try {
    const node = (JSON.parse(answer.body) as { broker?: { node?: unknown } }).broker?.node;
    return typeof node === 'string'
      ? { node }
      : { unknown: `the service at ${url} names no broker node` };
  } catch {
    return { unknown: `the service at ${url} answered something else than JSON` };
  }
}

/**
 * `warehouse-ingest healthcheck`: the container's HEALTHCHECK. Reads the configuration the way
 * `serve` does (files and environment), asks the admin listener's /healthz, exits 0 on 200 and 1
 * otherwise, with one line saying why.
 */
export async function healthcheckCommand(args: string[], io: Output): Promise<number> {
  const { values } = parse('healthcheck', () =>
    parseArgs({ args, options: { 'timeout-ms': { type: 'string' } }, strict: true }),
  );
  const timeoutMs = Number(values['timeout-ms'] ?? 2000);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
    throw new UsageError(
      '--timeout-ms needs a positive whole number of milliseconds',
      'healthcheck',
    );
  // The broker's secret may be given to the service alone: the probe never publishes.
  const { admin } = loadConfig({ brokerRequired: false });
  if (admin.port === 0) {
    io.err('warehouse-ingest: admin.port is 0 (a free port): a probe cannot know where to ask\n');
    return 1;
  }
  const url = healthzUrl(admin);
  const outcome = await get(url, timeoutMs);
  if (outcome === 200) return 0;
  io.err(
    `warehouse-ingest: ${url} ${typeof outcome === 'number' ? `answered ${outcome}` : `did not answer: ${outcome}`}\n`,
  );
  return 1;
}

/** The status and body (its first 64 KiB) of one GET, or why there was none. */
function getText(
  url: string,
  timeoutMs: number,
): Promise<{ status: number; body: string } | string> {
  return new Promise((resolve) => {
    const request = http.get(url, { timeout: timeoutMs }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        if (body.length < 65_536) body += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      response.on('error', (error) => resolve(error.message));
    });
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', (error) => resolve(error.message));
  });
}

/**
 * The status of one GET, or why there was none. node:http, not fetch: fetch refuses the ports of
 * the WHATWG "bad ports" list (6000, 6665–6669, 10080 …), which admin.port may well be.
 */
function get(url: string, timeoutMs: number): Promise<number | string> {
  return new Promise((resolve) => {
    const request = http.get(url, { timeout: timeoutMs }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', (error) => resolve(error.message));
  });
}
