import { execFileSync } from 'node:child_process';
import { chmodSync } from 'node:fs';

/**
 * A fresh self-signed pair for localhost (and 127.0.0.1), valid one day, written to `certFile`
 * and `keyFile` (the key chmod 600, as the service demands of a key file) by the real openssl.
 */
export function makeCertificate(certFile: string, keyFile: string): void {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  chmodSync(keyFile, 0o600);
}
