-- throttled: fixed_window decision for KEYS[1].
-- ARGV: now_us ("" = Redis TIME), limit, period_us, capacity, cost,
--       multiplier, refund ("1" = give cost back).
-- Reply: {reason (0 allowed, 1 over_quota, 2 shed), remaining, reset_us, retry_us}.
-- It mirrors limiter/algorithms.go operation by operation. The prelude (up to "local eps")
-- and the finish (PEXPIRE, return) are the same in every script; a test checks it.
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
local eps = 1e-9
local ws = math.floor(now / period) * period
local v = redis.call('HMGET', KEYS[1], 'q', 'ts')
local q, ts = tonumber(v[1]), tonumber(v[2])
if q == nil or ts ~= ws then q = 0 end
local al = math.max(math.floor(limit * m + eps), cost)
local left = ws + period - now
local reason = 0
if refund then q = math.max(0, q - cost)
elseif q + cost > limit then reason = 1
elseif q + cost > al then reason = 2
else q = q + cost end
local retry = 0
if reason ~= 0 then retry = left end
redis.call('HSET', KEYS[1], 'q', q, 'ts', ws)
local remaining, reset, ttl = math.max(0, math.min(limit, al) - q), left, left
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl / 1000) + 1000)
return {reason, remaining, math.ceil(reset), math.ceil(retry)}
