import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Server-side request forgery guard. In production a webhook URL is the business's input, so it
 * must not reach the warehouse's own network: the resolved address is checked at every new
 * connection (a DNS answer can change between two deliveries), and an IP literal before any
 * socket opens.
 */

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'shared'
  | 'unspecified'
  | 'multicast'
  | 'reserved'
  | 'ipv4-mapped';

const RANGES: ReadonlyArray<[AddressClass, string, number, 'ipv4' | 'ipv6']> = [
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  ['shared', '100.64.0.0', 10, 'ipv4'], // CGNAT
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['link-local', '169.254.0.0', 16, 'ipv4'], // includes the cloud metadata address 169.254.169.254
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['reserved', '192.0.0.0', 24, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  ['reserved', '198.18.0.0', 15, 'ipv4'], // benchmarking
  ['multicast', '224.0.0.0', 4, 'ipv4'],
  ['reserved', '240.0.0.0', 4, 'ipv4'], // includes 255.255.255.255
  ['unspecified', '::', 128, 'ipv6'],
  ['loopback', '::1', 128, 'ipv6'],
  // Mapped and compatible forms reach IPv4 hosts through an IPv6 socket: refused whatever they embed.
  ['ipv4-mapped', '::ffff:0:0', 96, 'ipv6'],
  ['ipv4-mapped', '::', 96, 'ipv6'],
  ['private', 'fc00::', 7, 'ipv6'],
  ['link-local', 'fe80::', 10, 'ipv6'],
  ['multicast', 'ff00::', 8, 'ipv6'],
];

const LISTS = RANGES.map(([kind, network, prefix, family]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { kind, list, family };
});

/** Which kind of destination an IP address is; `public` is the only one production reaches. */
export function classifyAddress(address: string): AddressClass {
  const version = isIP(address);
  if (version === 0) throw new TypeError('Not an IP address');
  const family = version === 4 ? 'ipv4' : 'ipv6';
  for (const { kind, list, family: rangeFamily } of LISTS)
    if (rangeFamily === family && list.check(address, family)) return kind;
  return 'public';
}

/** A destination refused by the guard. Its message names the host and class, never the URL. */
export class DestinationRefused extends Error {
  override readonly name = 'DestinationRefused';
  readonly code = 'destination-refused';
}

export function assertPublicAddress(host: string, address: string): void {
  const kind = classifyAddress(address);
  if (kind !== 'public')
    throw new DestinationRefused(
      `Destination ${host} resolves to ${address} (${kind}); refused in production unless the webhook sets allowPrivateNetwork`,
    );
}

/** `dns.lookup` with `all: true`; tests pass a stub so that names resolve without DNS. */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true } satisfies LookupAllOptions, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    ),
  );

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for `net.connect`/`tls.connect` that resolves through `resolver` and refuses the
 * connection when any answer is not public (one private answer among public ones is how DNS
 * rebinding is usually attempted).
 */
export function guardedLookup(resolver: Resolver = systemResolver) {
  return resolvingLookup(resolver, (hostname, addresses) => {
    for (const { address } of addresses) assertPublicAddress(hostname, address);
  });
}

/** A `lookup` through `resolver`, with `check` to refuse answers (throw) before the socket connects. */
export function resolvingLookup(
  resolver: Resolver,
  check: (hostname: string, addresses: LookupAddress[]) => void = () => {},
) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    resolver(hostname).then(
      (addresses) => {
        try {
          if (addresses.length === 0) throw new DestinationRefused(`${hostname} did not resolve`);
          check(hostname, addresses);
        } catch (error) {
          return callback(error as NodeJS.ErrnoException, '');
        }
        const first = addresses[0] as LookupAddress;
        if (options.all) callback(null, addresses);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
}
