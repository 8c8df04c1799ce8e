-- throttled: sliding_window_counter decision for KEYS[1].
-- ARGV: now_us ("" = Redis TIME), limit, period_us, capacity, cost,
--       multiplier, refund ("1" = give cost back).
-- Reply: {reason (0 allowed, 1 over_quota, 2 shed), remaining, reset_us, retry_us}.
-- It mirrors limiter/windows.go operation by operation. The prelude (up to "local eps")
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
local v = redis.call('HMGET', KEYS[1], 'q', 'a', 'ts')
local q, a, ts = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
if q == nil or a == nil or ts == nil then q, a, ts = 0, 0, ws
elseif ts == ws then
elseif ts + period == ws then q, a, ts = 0, q, ws
else q, a, ts = 0, 0, ws end
local w = (period - (now - ws)) / period
local est = a * w + q
local al = math.max(math.floor(limit * m + eps), cost)
local function retry_for(lim)
  local need = lim - q - cost
  local at
  if need >= 0 then at = ts + period - need / a * period
  else at = ts + 2 * period - (lim - cost) / q * period end
  return math.max(0, at - now)
end
local reason, retry = 0, 0
if refund then q = math.max(0, q - cost); est = a * w + q
elseif est + cost > limit then reason, retry = 1, retry_for(limit)
elseif est + cost > al then reason, retry = 2, retry_for(al)
else q = q + cost; est = est + cost end
local remaining = math.max(0, math.floor(math.min(limit, al) - est + eps))
local ttl = ws + 2 * period - now
local reset = 0
if q > 0 then reset = ttl elseif a > 0 then reset = ws + period - now end
redis.call('HSET', KEYS[1], 'q', q, 'a', a, 'ts', ts)
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl / 1000) + 1000)
return {reason, remaining, math.ceil(reset), math.ceil(retry)}
