/**
 * Which host keys an SFTP server may show: pinned fingerprints and/or known_hosts contents,
 * never blind trust. Apart from the session so the rules can be read (and tested) alone.
 */
import { createHash, createHmac } from 'node:crypto';

/** What the policy needs of the store's options. */
export interface HostKeyOptions {
  readonly host: string;
  readonly port: number;
  readonly hostKeyFingerprints?: readonly string[] | undefined;
  readonly knownHosts?: string | undefined;
}

/** OpenSSH's fingerprint of a public key blob: `SHA256:` + unpadded base64, as `ssh-keygen -l` prints. */
export function fingerprintOf(key: Buffer): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}

const FINGERPRINT = /^SHA256:[A-Za-z0-9+/]{43}=?$/;

export interface HostKeyPolicy {
  accepts(key: Buffer): boolean;
  accepted(fingerprint: string): boolean;
  describe(): string;
}

/**
 * Pinned fingerprints and/or known_hosts contents; a key is accepted when either vouches for it
 * and no `@revoked` line names it. Never blind trust: with neither given this throws.
 */
export function hostKeyPolicy(options: HostKeyOptions): HostKeyPolicy {
  const pinned = (options.hostKeyFingerprints ?? []).map((f) => {
    if (!FINGERPRINT.test(f))
      throw new TypeError(
        `hostKeyFingerprints: expected SHA256:<base64> as ssh-keygen -l prints it, got ${JSON.stringify(f.slice(0, 80))}`,
      );
    return f.replace(/=+$/, '');
  });
  const known =
    options.knownHosts === undefined
      ? undefined
      : knownHostKeys(options.knownHosts, options.host, options.port);
  if (pinned.length === 0 && known === undefined) {
    throw new TypeError(
      `SFTP ${options.host}:${options.port}: give hostKeyFingerprints or knownHosts — a server's host key is never trusted blindly`,
    );
  }
  const revoked = new Set(known?.revoked.map(fingerprintOf));
  const trusted = new Set([...pinned, ...(known?.trusted.map(fingerprintOf) ?? [])]);
  const accepted = (fingerprint: string) => trusted.has(fingerprint) && !revoked.has(fingerprint);
  return {
    accepted,
    accepts: (key) => accepted(fingerprintOf(key)),
    describe() {
      const sources = [
        pinned.length > 0 && `the ${pinned.length} pinned hostKeyFingerprints`,
        known && `the ${known.trusted.length} known_hosts key(s) for this host`,
      ].filter(Boolean);
      return `matches none of ${sources.join(' or ')}${revoked.size > 0 ? ' (or is @revoked)' : ''}`;
    },
  };
}

/** The keys known_hosts lists for `host:port`: plain, `[host]:port`, wildcard and hashed (`|1|`) names. */
export function knownHostKeys(
  contents: string,
  host: string,
  port: number,
): { trusted: Buffer[]; revoked: Buffer[] } {
  const name = port === 22 ? host : `[${host}]:${port}`;
  const trusted: Buffer[] = [];
  const revoked: Buffer[] = [];
  for (const raw of contents.split(/\r?\n/)) {
    const fields = raw.trim().split(/\s+/);
    if (fields[0] === undefined || fields[0] === '' || fields[0].startsWith('#')) continue;
    const marker = fields[0].startsWith('@') ? fields.shift() : undefined;
    const [patterns, , keyBase64] = fields;
    if (patterns === undefined || keyBase64 === undefined || marker === '@cert-authority') continue; // CAs: not supported
    if (!hostMatches(patterns, name)) continue;
    (marker === '@revoked' ? revoked : trusted).push(Buffer.from(keyBase64, 'base64'));
  }
  return { trusted, revoked };
}

function hostMatches(patterns: string, name: string): boolean {
  let matched = false;
  for (const pattern of patterns.split(',')) {
    const negated = pattern.startsWith('!');
    const body = negated ? pattern.slice(1) : pattern;
    let hit: boolean;
    if (body.startsWith('|1|')) {
      const [, , salt = '', hash = ''] = body.split('|');
      hit = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash;
    } else {
      const glob = body
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.');
      hit = new RegExp(`^${glob}$`, 'i').test(name);
    }
    if (hit && negated) return false;
    matched ||= hit;
  }
  return matched;
}
