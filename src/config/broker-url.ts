/**
 * Checks of `broker.url` (`AMQP_URL`) beyond its scheme, for each node's URL. A password with an unencoded `/`, `?`
 * or `#` ends the URL's authority early, so the URL does not parse; amqplib then falls back to
 * localhost and the service retries forever against the wrong broker. Refused at start-up
 * instead, with a message that never holds the password.
 */

/**
 * `AMQP_URL` with several nodes: URLs separated by commas. A comma may also sit unencoded in a
 * password, so the text is cut only at a comma followed by the next URL's scheme.
 */
export function splitBrokerUrls(text: string): string[] {
  return text
    .split(/,\s*(?=amqps?:\/\/)/i)
    .map((url) => url.trim())
    .filter((url) => url !== '');
}

/** The URL with its password (and a user name that is itself malformed) replaced by `****`. */
export function maskedBrokerUrl(url: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0] ?? '';
  const rest = url.slice(scheme.length);
  const at = rest.lastIndexOf('@');
  if (at < 0) return url;
  const userInfo = rest.slice(0, at);
  const colon = userInfo.indexOf(':');
  const user = colon < 0 ? userInfo : userInfo.slice(0, colon);
  const shownUser = /[/?#@%]/.test(user) ? '****' : user;
  return `${scheme}${shownUser}${colon < 0 ? '' : ':****'}@${rest.slice(at + 1)}`;
}

/** Why the URL cannot be used as it is written, or undefined when it can. */
export function brokerUrlProblem(url: string): string | undefined {
  const masked = maskedBrokerUrl(url);
  const rest = url.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  const at = rest.lastIndexOf('@');
  const userInfo = at < 0 ? '' : rest.slice(0, at);
  const reserved = userInfo.match(/[/?#]/)?.[0];
  if (reserved) {
    return `The user name or password holds an unencoded "${reserved}", which ends the host part of the URL early: percent-encode it (${RESERVED_ENCODINGS}), as in ${masked}`;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `Not a valid URL: ${masked} (expected amqp://user:password@host:5672/vhost, with reserved characters in the user name, password or vhost percent-encoded)`;
  }
  if (parsed.hostname === '') return `No host in ${masked}`;
  return undefined;
}

const RESERVED_ENCODINGS = '/ → %2F, ? → %3F, # → %23, @ → %40, : → %3A, % → %25';
