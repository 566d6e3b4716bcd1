import { chmodSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { secretFileExposure } from '../../src/secret-files.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder('secret-files-');
const HASH =
  '$scrypt$ln=15,r=8,p=1$+YFdvPPhv2qW47q7byFayA==$aiMeL23WTIX241/bstORfRiezMWyYL1CodQnEQDss2o=';

// The service runs as uid 1000, in group 1000 and (Kubernetes' fsGroup) 2000.
const SERVICE_GROUPS = [1000, 2000];
const exposure = (mode: number, uid: number, gid: number) =>
  secretFileExposure({ mode: 0o100000 | mode, uid, gid }, SERVICE_GROUPS);

describe('which secret files are private enough (the rule PostgreSQL applies to its key)', () => {
  it('accepts what a Kubernetes secret mount gives: 0400, or 0440 owned by root and the fsGroup', () => {
    expect(exposure(0o400, 1000, 1000)).toBeUndefined();
    expect(exposure(0o600, 1000, 1000)).toBeUndefined();
    expect(exposure(0o440, 0, 2000)).toBeUndefined(); // defaultMode 0400 with fsGroup 2000
    expect(exposure(0o640, 0, 0)).toBeUndefined(); // root:root 0640, as PostgreSQL allows
    expect(exposure(0o440, 1000, 1000)).toBeUndefined(); // the service's own group
  });

  it('refuses a file others may read or write, or its group may write', () => {
    expect(exposure(0o644, 0, 0)).toBe('is readable or writable by others');
    expect(exposure(0o602, 1000, 1000)).toBe('is readable or writable by others');
    expect(exposure(0o660, 0, 2000)).toBe('is writable by its group');
  });

  it("refuses a group-readable file of another owner whose group is not one of the service's", () => {
    expect(exposure(0o440, 1234, 1234)).toMatch(/^is readable by group 1234, which is not one/);
  });

  it('starts with a 0440 secret file owned by this process or root, as a mounted secret is', () => {
    const file = temp.write(
      'tenants.json',
      JSON.stringify([{ businessId: 'ACME', apiKeyHash: HASH }]),
      0o440,
    );
    expect(loadConfig({ env: { INGEST_TENANTS_FILE: file } }).tenants[0]?.businessId).toBe('ACME');
    chmodSync(file, 0o600);
  });
});
