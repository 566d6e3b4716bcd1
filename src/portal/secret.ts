import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Environment } from '../config/schema.js';
import { ConfigError } from '../operator-errors.js';
import { exposedSecretFile } from '../secret-files.js';
import type { PortalConfig } from '../config/portal-schema.js';

/** What the portal's secret is read from: its own settings, the environment and the data folder. */
export interface PortalSecretSource {
  readonly environment: Environment;
  readonly dataDirectory: string;
  readonly portal: Pick<PortalConfig, 'secret'>;
}

/** Shorter secrets are refused: HMAC-SHA256 wants at least as many bytes of key as it gives. */
const MIN_SECRET_CHARS = 32;

/** The file a development service and `portal-link` share when no secret is configured. */
export function generatedSecretFile(dataDirectory: string): string {
  return path.join(dataDirectory, 'portal-secret');
}

/**
 * The portal secret: from `portal.secret` (`{ env }` or `{ file }`), or — outside production,
 * when none is set — from `<dataDirectory>/portal-secret`, created once (mode 600, never
 * overwritten: `wx`) so that the service and `portal-link` on one data folder agree. Problems
 * name the setting, never the value.
 */
export function readPortalSecret(
  source: PortalSecretSource,
  env: NodeJS.ProcessEnv = process.env,
): Buffer {
  const ref = source.portal.secret;
  const refuse = (file: string, message: string): never => {
    throw new ConfigError([{ file, field: 'portal.secret', message }]);
  };
  if (!ref) {
    if (source.environment === 'production')
      refuse(
        '(configuration)',
        'Required in production when the portal is enabled: { env: NAME } or { file: PATH }',
      );
    return generatedSecret(generatedSecretFile(source.dataDirectory));
  }
  let text: string | undefined;
  if ('env' in ref) {
    text = env[ref.env];
    if (!text) refuse(`environment variable ${ref.env}`, 'Not set');
  } else {
    try {
      const exposed = exposedSecretFile(ref.file);
      if (exposed) refuse(ref.file, exposed);
      text = readFileSync(ref.file, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      refuse(ref.file, 'Cannot be read');
    }
  }
  if (text === undefined || text.length < MIN_SECRET_CHARS)
    refuse('portal.secret', `Expected at least ${MIN_SECRET_CHARS} characters`);
  return Buffer.from(text as string, 'utf8');
}

function generatedSecret(file: string): Buffer {
  mkdirSync(path.dirname(file), { recursive: true });
  // Written whole under a name of its own, then linked: a reader never sees a half-written secret.
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(draft, `${randomBytes(32).toString('base64url')}\n`, { flag: 'wx', mode: 0o600 });
  try {
    linkSync(draft, file);
  } catch (error) {
    // Created before (by the service or `portal-link`): the one on disk is the secret.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(draft);
  }
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'utf8');
}
