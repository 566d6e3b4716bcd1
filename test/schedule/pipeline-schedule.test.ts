import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { loadPipelines } from '../../src/drops/definition.js';
import { problemsOf } from '../support/config-problems.js';
import { tempFolder } from '../support/temp.js';

const BODY =
  'businessId: ACME\nkind: sales-orders\nformat: v1-csv\nsource: { type: local, path: /tmp/drop }\n';

const problems = (dir: string) => problemsOf(() => loadPipelines(dir));

describe('pipeline schedules and reprocessing jobs', () => {
  it('takes a cron expression with an IANA time zone, or a poll interval (5000 ms when neither is given)', () => {
    const temp = tempFolder();
    temp.write(
      'a.yaml',
      `name: by-cron\n${BODY}schedule: { cron: "*/10 * * * * *", timezone: Europe/London }\n`,
    );
    temp.write('b.yaml', `name: by-interval\n${BODY}schedule: { pollIntervalMs: 250 }\n`);
    temp.write(
      'c.yaml',
      `name: by-default\n${BODY}reprocess:\n  - { name: nightly, cron: "0 2 * * *", timezone: America/New_York }\n`,
    );
    const [a, b, c] = loadPipelines(temp.dir);
    expect(a!.schedule).toEqual({ cron: '*/10 * * * * *', timezone: 'Europe/London' });
    expect(b!.schedule).toEqual({ pollIntervalMs: 250 });
    expect(c!.schedule).toEqual({ pollIntervalMs: 5000 });
    expect(c!.reprocess).toEqual([
      {
        name: 'nightly',
        cron: '0 2 * * *',
        timezone: 'America/New_York',
        statuses: ['failed'],
        sinceDays: 7,
      },
    ]);
    expect(a!.reprocess).toEqual([]);
  });

  it('refuses bad cron expressions and time zones, naming file and field', () => {
    const temp = tempFolder();
    const file = temp.write(
      'bad.yaml',
      [
        'name: bad-schedule',
        BODY.trimEnd(),
        'schedule: { cron: "61 * * * *", timezone: Mars/Olympus_Mons }',
        'reprocess:',
        '  - { name: a, cron: "every day", statuses: [dead] }',
        '  - { name: a, cron: "0 3 * * *", timezone: "+01:00", sinceDays: 0 }',
      ].join('\n'),
    );
    const found = problems(temp.dir);
    expect(found.every((p) => p.file === file)).toBe(true);
    expect(found.map((p) => p.field).sort()).toEqual(
      [
        'schedule.cron',
        'schedule.timezone',
        'reprocess[0].cron',
        'reprocess[0].statuses[0]',
        'reprocess[1].timezone',
        'reprocess[1].sinceDays',
      ].sort(),
    );
    expect(found.find((p) => p.field === 'schedule.cron')!.message).toMatch(
      /^Invalid cron expression: 61 is a invalid expression for minute/,
    );
    expect(found.find((p) => p.field === 'schedule.timezone')!.message).toContain(
      'Unknown time zone "Mars/Olympus_Mons"',
    );
    expect(found.find((p) => p.field === 'reprocess[1].timezone')!.message).toContain('IANA');
  });

  it('refuses a cron and a poll interval together, a time zone without cron, and two reprocess jobs of one name', () => {
    const temp = tempFolder();
    temp.write(
      'both.yaml',
      `name: both\n${BODY}schedule: { cron: "* * * * *", pollIntervalMs: 1000 }\n`,
    );
    temp.write('zone.yaml', `name: zone\n${BODY}schedule: { timezone: UTC }\n`);
    temp.write(
      'twice.yaml',
      `name: twice\n${BODY}reprocess: [{ name: n, cron: "0 * * * *" }, { name: n, cron: "30 * * * *" }]\n`,
    );
    const found = problems(temp.dir).map((p) => [p.file.split('/').pop(), p.field, p.message]);
    expect(found).toEqual([
      ['both.yaml', 'schedule.cron', 'Give either pollIntervalMs or cron, not both'],
      ['twice.yaml', 'reprocess[1].name', 'Another reprocess job is named "n"'],
      [
        'zone.yaml',
        'schedule.timezone',
        'A time zone applies to a cron schedule only: give cron too',
      ],
    ]);
  });

  it('lint reports a bad schedule through the same loader, with file and field', async () => {
    const temp = tempFolder();
    const pipelines = `${temp.dir}/pipelines`;
    await import('node:fs').then((fs) => fs.mkdirSync(pipelines));
    temp.write(
      'pipelines/bad.yaml',
      `name: linted\nbusinessId: DEMO\nkind: sales-orders\nformat: v1-csv\nsource: { type: local, path: /tmp/drop }\nschedule: { cron: "* * 32 * *" }\n`,
    );
    const config = temp.write('config.yaml', `pipelinesDirectory: ${pipelines}\n`);
    const result = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'src/cli.ts', 'lint'],
      {
        cwd: new URL('../..', import.meta.url).pathname,
        env: { ...process.env, INGEST_CONFIG: config, INGEST_ENV: 'development' },
      },
    ).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `${pipelines}/bad.yaml: schedule.cron: Invalid cron expression: 32 is a invalid expression for day of month`,
    );
  });
});
