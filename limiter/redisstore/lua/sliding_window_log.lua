-- throttled: sliding_window_log decision for KEYS[1].
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
local function f(x) return string.format('%.17g', x) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', f(now - period))
local n = redis.call('ZCARD', KEYS[1])
local al = math.max(math.floor(limit * m + eps), cost)
local function score_at(i)
  local r = redis.call('ZRANGE', KEYS[1], i, i, 'WITHSCORES')
  return tonumber(r[2])
end
local reason, retry = 0, 0
if refund then
  redis.call('ZPOPMAX', KEYS[1], cost)
  n = redis.call('ZCARD', KEYS[1])
elseif n + cost > limit then reason, retry = 1, score_at(n + cost - limit - 1) + period - now
elseif n + cost > al then reason, retry = 2, score_at(n + cost - al - 1) + period - now
else
  local batch = {}
  for i = 1, cost do
    batch[#batch + 1] = f(now)
    batch[#batch + 1] = f(now) .. '-' .. (n + i)
    if #batch >= 1000 or i == cost then
      redis.call('ZADD', KEYS[1], unpack(batch))
      batch = {}
    end
  end
  n = n + cost
end
local reset = 0
if n > 0 then reset = score_at(-1) + period - now end
local remaining, ttl = math.max(0, math.min(limit, al) - n), period
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl / 1000) + 1000)
return {reason, remaining, math.ceil(reset), math.ceil(retry)}
