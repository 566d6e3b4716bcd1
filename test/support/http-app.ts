import type { H3 } from 'h3';
import { hashApiKey } from '../../src/api-keys.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { buildHttpApp } from '../../src/http/build.js';
import type { EventActions } from '../../src/events/actions.js';
import type { HistoryStore } from '../../src/history/store.js';
import type { HistoryWriter } from '../../src/history/writer.js';
import type { SharedState } from '../../src/http-state/state.js';
import { createPublisher } from '../../src/publish/index.js';
import type { Publisher } from '../../src/publish/publisher.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from './broker.js';
import { tempFolder } from './temp.js';

/** Two onboarded businesses; the keys exist only in this test code. */
export const ACME = { businessId: 'ACME', apiKey: 'acme-test-key-4f9c2e71b0d8' } as const;
export const OTHER = { businessId: 'OTHER', apiKey: 'other-test-key-9a1d3c55e2f7' } as const;

export function basicAuth(credentials: { businessId: string; apiKey: string }): string {
  return `Basic ${Buffer.from(`${credentials.businessId}:${credentials.apiKey}`).toString('base64')}`;
}

let tenantYaml: Promise<string> | undefined;
function tenantsYaml(): Promise<string> {
  return (tenantYaml ??= (async () => {
    const lines = ['tenants:'];
    for (const tenant of [ACME, OTHER]) {
      lines.push(
        `  - businessId: ${tenant.businessId}`,
        `    apiKeyHash: "${await hashApiKey(tenant.apiKey)}"`,
      );
    }
    return lines.join('\n');
  })());
}

/**
 * The DEMO business with a key of its own: the public demo credential is refused with a real
 * broker (src/start-up.ts), so tests that publish to RabbitMQ as DEMO configure this one.
 */
export const DEMO_WITH_BROKER = {
  businessId: 'DEMO',
  apiKey: 'demo-broker-test-key-7c1e93a0',
} as const;

/** `tenants:` YAML with DEMO_WITH_BROKER, for a service that publishes to RabbitMQ as DEMO. */
export async function demoTenantYaml(): Promise<string> {
  return `tenants:\n  - businessId: DEMO\n    apiKeyHash: "${await hashApiKey(DEMO_WITH_BROKER.apiKey)}"\n`;
}

/** Log lines written by the app under test, parsed. */
export class LogCapture {
  readonly lines: Array<Record<string, unknown>> = [];
  readonly raw: string[] = [];
  write(line: string): void {
    this.raw.push(line);
    this.lines.push(JSON.parse(line) as Record<string, unknown>);
  }
}

export interface TestApp {
  /** The partner-facing app. */
  readonly app: H3;
  /** The admin listener's app: /metrics, /readyz, /healthz. */
  readonly admin: H3;
  readonly config: Readonly<Config>;
  readonly publisher: Publisher;
  readonly topology: TestTopology;
  readonly logs: LogCapture;
  /** POST a batch to `/api/v2/<kind>` (or any path starting with `/`) as ACME unless told otherwise. */
  post(kindOrPath: string, body: unknown, init?: PostInit): Promise<Response>;
  close(): Promise<void>;
}

export interface PostInit {
  auth?: string | null;
  headers?: Record<string, string>;
  /** Sent as-is instead of JSON.stringify(body). */
  raw?: NonNullable<RequestInit['body']>;
}

export interface TestAppOptions {
  environment?: 'development' | 'sandbox' | 'production';
  /** Bindings of the test queue. @default ['#'] */
  bindingKeys?: string[];
  /** e.g. a TCP proxy's URL in front of the broker. @default the test broker */
  amqpUrl?: string | null;
  /** More YAML merged into the config (e.g. `http:` limits). */
  yaml?: string;
  routingKey?: string;
  /** e.g. the Redis state (test/support/redis.ts). @default in memory */
  sharedState?: SharedState;
  /** The history: batches are written to `writer`, the partner API reads `store`. @default none */
  history?: { writer: HistoryWriter; store: HistoryStore };
  /** An events worker's actions (the partner API's webhooks, test and resend). @default none */
  events?: EventActions;
}

/**
 * The real app, built as `main.ts` builds it, over the real broker with a fresh exchange and
 * queue; requests go through `app.request()` (no socket).
 */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const topology = await declareTestTopology({ bindingKeys: options.bindingKeys ?? ['#'] });
  const folder = tempFolder();
  const yaml = [
    await tenantsYaml(),
    `dataDirectory: ${folder.dir}`,
    'broker:',
    `  exchange: ${topology.exchange}`,
    `  routingKey: "${options.routingKey ?? '{kind}.{businessId}'}"`,
    '  publishTimeoutMs: 15000',
    '  reconnect: { initialDelayMs: 50, maxDelayMs: 500 }',
    '  queues:',
    `    - name: ${topology.queue}`,
    `      bindingKeys: ${JSON.stringify(options.bindingKeys ?? ['#'])}`,
    options.yaml ?? '',
  ].join('\n');
  const env: NodeJS.ProcessEnv = {
    INGEST_CONFIG: folder.write('config.yaml', yaml),
    INGEST_ENV: options.environment ?? 'development',
  };
  if (options.amqpUrl !== null) env.AMQP_URL = options.amqpUrl ?? AMQP_URL;
  const config = loadConfig({ env });
  const logs = new LogCapture();
  const log = createLogger({ level: 'debug', destination: logs });
  const publisher = createPublisher(config, log);
  await publisher.start();
  const { app, admin } = buildHttpApp(config, publisher, log, {
    ...(options.sharedState && { sharedState: options.sharedState }),
    ...(options.history && {
      history: options.history.writer,
      historyStore: options.history.store,
    }),
    ...(options.events && { events: options.events }),
  });

  return {
    app,
    admin,
    config,
    publisher,
    topology,
    logs,
    async post(kindOrPath, body, init = {}) {
      const path = kindOrPath.startsWith('/') ? kindOrPath : `/api/v2/${kindOrPath}`;
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        ...init.headers,
      };
      const auth = init.auth === undefined ? basicAuth(ACME) : init.auth;
      if (auth !== null) headers.authorization = auth;
      return app.request(path, { method: 'POST', headers, body: init.raw ?? JSON.stringify(body) });
    },
    async close() {
      await options.sharedState?.close();
      await publisher.close();
      await topology.cleanup();
    },
  };
}

/** A response body as the tests read it: the bulk response or problem details. */
export interface Answer {
  success?: boolean;
  recordCount?: number;
  messageIds: string[];
  correlationId?: string;
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  instance?: string;
  errors?: unknown[];
}

export async function answer(response: Response): Promise<Answer> {
  return (await response.json()) as Answer;
}

/** A chunked JSON-array body (no Content-Length) that repeats `record` until it has sent about `bytes`. */
export function growingBody(record: unknown, bytes: number): ReadableStream<Uint8Array> {
  const chunk = new TextEncoder().encode(`${JSON.stringify(record)},`);
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent === 0) controller.enqueue(new TextEncoder().encode('['));
      controller.enqueue(chunk);
      sent += chunk.byteLength;
      if (sent > bytes) controller.close();
    },
  });
}
