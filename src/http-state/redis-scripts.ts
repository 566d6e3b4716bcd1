/**
 * Every command the Redis state sends is one of these Lua scripts: one round trip, atomic, timed
 * by the Redis server's clock (instances whose clocks differ still agree).
 *
 * Each takes KEYS[1] and, as ARGV[1], a nonce of the call, and answers an array that starts with
 * that nonce: the connection checks it, so a reply can never be taken for another call's (see
 * redis-connection.ts). None answers nil: ioredis 6.0.0 throws, uncaught, on a nil reply that
 * finds its command queue empty (`DataHandler.shiftCommand`), and that must not be reachable.
 */
export type ScriptName = keyof typeof SCRIPTS;

/** The scripts whose reply gives, after the nonce, the server's replica count (REPLICAS below). */
export const REPORTS_REPLICAS: ReadonlySet<ScriptName> = new Set(['claimKey', 'settleKey']);

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * The replicas connected to this server now (0 on a replica or a lone server): the writes of
 * claims and answers are waited for on that many (WAIT, redis-connection.ts), behind Sentinel.
 * `pcall`: a server that refuses INFO (renamed away) counts as having none, and still serves.
 */
const REPLICAS = `local info = redis.pcall('INFO', 'replication')
local replicas = type(info) == 'string' and tonumber(string.match(info, 'connected_slaves:(%d+)')) or 0`;

export const SCRIPTS = {
  // ARGV: nonce, the pending record, ttl ms. {nonce, replicas} once claimed, {nonce, replicas, held}
  // when the key holds something.
  claimKey: `${REPLICAS}
local held = redis.call('GET', KEYS[1])
if held then return {ARGV[1], replicas, held} end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return {ARGV[1], replicas}`,

  // ARGV: nonce, the pending record as set, the settled record ('' = forget), ttl ms. {nonce, replicas}.
  settleKey: `${REPLICAS}
if redis.call('GET', KEYS[1]) == ARGV[2] then
  if ARGV[3] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4]) end
end
return {ARGV[1], replicas}`,

  // The token bucket of memory.ts, on Redis. ARGV: nonce, capacity, windowMs. {nonce, allowed, tokens}.
  takeToken: `${NOW}
local capacity = tonumber(ARGV[2])
local perMs = capacity / tonumber(ARGV[3])
local held = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(held[1]) or capacity
local at = tonumber(held[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * perMs)
local allowed = 0
if tokens >= 1 then tokens = tokens - 1; allowed = 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / perMs) + 1000)
return {ARGV[1], allowed, tostring(tokens)}`,

  // A sorted set of failure times. ARGV: nonce, windowMs. {nonce, count, oldestAgeMs}.
  recentFailures: `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
local count = redis.call('ZCARD', KEYS[1])
if count == 0 then return {ARGV[1], 0, 0} end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {ARGV[1], count, now - tonumber(oldest[2])}`,

  // ARGV: nonce (also the new member: unique), windowMs, cap. {nonce}.
  addFailure: `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('ZADD', KEYS[1], now, ARGV[1])
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if excess > 0 then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, excess - 1) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {ARGV[1]}`,

  // A value by key (values of state.ts). ARGV: nonce. {nonce, value}, or {nonce} when none.
  getValue: `local v = redis.call('GET', KEYS[1])
if v then return {ARGV[1], v} end
return {ARGV[1]}`,

  // ARGV: nonce, value, ttl ms. {nonce}.
  setValue: `redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return {ARGV[1]}`,

  // ARGV: nonce. {nonce}.
  deleteValue: `redis.call('DEL', KEYS[1])
return {ARGV[1]}`,
} as const;
