-- throttled: leaky_bucket decision for KEYS[1].
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
-- State: one string, struct.pack('<ddd', lq, la, ts); a hash {q, a, ts}
-- written by older versions is read once and replaced.
local v, lq, la, ts = redis.pcall('GET', KEYS[1])
if type(v) == 'string' and #v == 24 then lq, la, ts = struct.unpack('<ddd', v)
elseif type(v) == 'table' then
  v = redis.call('HMGET', KEYS[1], 'q', 'a', 'ts')
  lq, la, ts = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
  redis.call('DEL', KEYS[1])
end
if lq == nil or la == nil or ts == nil then lq, la, ts = 0, 0, now end
local el = math.max(0, now - ts)
lq = math.max(0, lq - el * rate)
la = math.max(0, la - el * arate)
if m >= 1 then la = lq end
local reason, retry = 0, 0
if refund then lq, la = math.max(0, lq - cost), math.max(0, la - cost)
elseif lq + cost > burst then reason, retry = 1, (lq + cost - burst) / rate
elseif la + cost > capa then lq = lq + cost; reason, retry = 2, math.max((la + cost - capa) / arate, (lq + cost - burst) / rate)
else lq, la = lq + cost, la + cost end
local remaining = math.max(0, math.floor(math.min(burst - lq, capa - la) + eps))
local reset = lq / rate
local ttl = math.max(reset, la / arate)
redis.call('SET', KEYS[1], struct.pack('<ddd', lq, la, math.max(ts, now)), 'PX', math.ceil(math.min(ttl, maxus) / 1000) + 1000)
return {reason, remaining, math.ceil(math.min(reset, maxus)), math.ceil(math.min(retry, maxus))}
