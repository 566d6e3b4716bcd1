import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

const LISTEN = '0A';

/**
 * Descriptors this process holds for TCP connections to its own listener on `port` (their local
 * port is the listener's), read from /proc: what a leak grows, whatever the server's own counters
 * say. Sockets the process has let go of (TIME_WAIT, FIN_WAIT) have no descriptor and are not counted.
 */
export function heldConnections(port: number): number {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const rows = readFileSync(table, 'utf8').split('\n').slice(1);
    for (const row of rows) {
      const [, local = '', , state, , , , , , inode = '0'] = row.trim().split(/\s+/);
      const localPort = Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16);
      if (localPort === port && state !== LISTEN && inode !== '0') inodes.add(inode);
    }
  }
  let held = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // closed between the listing and the read (the listing's own descriptor, for one)
    }
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode && inodes.has(inode)) held += 1;
  }
  return held;
}
