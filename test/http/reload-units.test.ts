import { describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import { ConfigError } from '../../src/operator-errors.js';
import { createLogger } from '../../src/log.js';
import { createReloader } from '../../src/reload.js';
import { LogCapture } from '../support/http-app.js';

/** The reload as a unit: all parts swap or none, and the log says what changed and what needs a restart. */
const start = loadConfig({ env: {} });
const HASH =
  '$scrypt$ln=15,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA==$aiMeL23WTIX241/bstORfRiezMWyYL1CodQnEQDss2o=';
const next: Readonly<Config> = {
  ...start,
  tenants: [...start.tenants, { businessId: 'NEW', apiKeyHash: HASH }],
  http: { ...start.http, port: 4000 },
};

function reloaderWith(load: () => Readonly<Config>, failing = false) {
  const logs = new LogCapture();
  const swapped: string[] = [];
  const part = (name: string, fails = false) => ({
    name,
    prepare: () => {
      if (fails) throw new Error(`${name} could not be prepared`);
      return () => void swapped.push(name);
    },
  });
  const reloader = createReloader({
    config: start,
    load,
    log: createLogger({ level: 'info', destination: logs }),
    parts: [part('tenants'), part('webhooks', failing), part('onboarding')],
  });
  return { reloader, swapped, logs };
}

describe('createReloader', () => {
  it('swaps every part, then logs the changes and the sections that need a restart', () => {
    const { reloader, swapped, logs } = reloaderWith(() => next);
    expect(reloader.reload()).toBe(true);
    expect(swapped).toEqual(['tenants', 'webhooks', 'onboarding']);
    expect(reloader.current()).toBe(next);
    expect(logs.lines).toMatchObject([
      {
        msg: 'configuration reloaded',
        tenants: { count: 2, added: ['NEW'], removed: [], keysChanged: [] },
        restartNeeded: ['http'],
      },
      { level: 'warn', restartNeeded: ['http'] },
    ]);
    expect(logs.raw.join('\n')).not.toContain(HASH.slice(-20));
  });

  it('swaps nothing when one part cannot be prepared, and keeps the running configuration', () => {
    const { reloader, swapped, logs } = reloaderWith(() => next, true);
    expect(reloader.reload()).toBe(false);
    expect(swapped).toEqual([]);
    expect(reloader.current()).toBe(start);
    expect(logs.lines).toMatchObject([{ level: 'error', error: 'webhooks could not be prepared' }]);
  });

  it('logs the file and field of each problem of a refused configuration', () => {
    const { reloader, swapped, logs } = reloaderWith(() => {
      throw new ConfigError([
        { file: '/etc/x.yaml', field: 'tenants[0].apiKeyHash', message: 'bad' },
      ]);
    });
    expect(reloader.reload()).toBe(false);
    expect(swapped).toEqual([]);
    expect(logs.lines).toMatchObject([
      {
        level: 'error',
        problems: [{ file: '/etc/x.yaml', field: 'tenants[0].apiKeyHash', message: 'bad' }],
        msg: 'configuration reload refused: the running configuration is kept',
      },
    ]);
  });
});
