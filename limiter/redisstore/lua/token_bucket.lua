-- throttled: token_bucket decision for KEYS[1].
-- ARGV: now_us ("" = Redis TIME), limit, period_us, capacity, cost,
--       multiplier, refund ("1" = give cost back).
-- Reply: {reason (0 allowed, 1 over_quota, 2 shed), remaining, reset_us, retry_us}.
-- It mirrors limiter/algorithms.go operation by operation. The prelude (up to "local eps"),
-- the TTL rule (refill time in ms + 1 s) and the reply are the same in every script; a test checks it.
local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit, period, burst = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local cost, m = tonumber(ARGV[5]), tonumber(ARGV[6])
local refund = ARGV[7] == '1'
local maxus = 9e15 -- limiter.MaxWait: the longest wait a reply says
local eps = 1e-9
local rate = limit / period
local arate = rate * m
local capa = math.max(burst * m, cost)
-- State: one string, struct.pack('<ddd', q, a, ts); a hash {q, a, ts}
-- written by older versions is read once and replaced.
local v, q, a, ts = redis.pcall('GET', KEYS[1])
if type(v) == 'string' and #v == 24 then q, a, ts = struct.unpack('<ddd', v)
elseif type(v) == 'table' then
  v = redis.call('HMGET', KEYS[1], 'q', 'a', 'ts')
  q, a, ts = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
  redis.call('DEL', KEYS[1])
end
if q == nil or a == nil or ts == nil then q, a, ts = burst, capa, now end
local el = math.max(0, now - ts)
q = math.min(burst, q + el * rate)
a = math.min(capa, a + el * arate)
if m >= 1 then a = q end
local reason, retry = 0, 0
if refund then q, a = math.min(burst, q + cost), math.min(capa, a + cost)
elseif q < cost then reason, retry = 1, (cost - q) / rate
elseif a < cost then q = q - cost; reason, retry = 2, math.max((cost - a) / arate, (cost - q) / rate)
else q, a = q - cost, a - cost end
local remaining = math.floor(math.min(q, a) + eps)
local reset = (burst - q) / rate
local ttl = math.max(reset, (capa - a) / arate)
redis.call('SET', KEYS[1], struct.pack('<ddd', q, a, math.max(ts, now)), 'PX', math.ceil(math.min(ttl, maxus) / 1000) + 1000)
return {reason, remaining, math.ceil(math.min(reset, maxus)), math.ceil(math.min(retry, maxus))}
