-- throttled: sliding_window_log decision for KEYS[1] (units sent) and KEYS[2] (units admitted).
-- ARGV: now_us ("" = Redis TIME), limit, period_us, capacity, cost,
--       multiplier, refund ("1" = give cost back), client key (unused here).
-- Reply: {reason (0 allowed, 1 over_quota, 2 shed), remaining, reset_us, retry_us}.
-- It mirrors limiter/windows.go operation by operation. It runs after part/prelude.lua
-- (scripts.go joins them; ScriptSource is the whole script). The TTL rule (refill time in ms + 1 s)
-- and the reply are the same in every script; a test checks it.
local function f(x) return string.format('%.17g', x) end
-- KEYS[1] logs every unit sent that was not over quota, KEYS[2] the units admitted.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', f(now - period))
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', f(now - period))
local n, na = redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2])
local al = max(floor(limit * m + eps), cost)
local function score_at(k, i)
  local r = redis.call('ZRANGE', k, i, i, 'WITHSCORES')
  return tonumber(r[2])
end
-- Members at one score are named score-000000000001, -2, ... in order, so
-- that ZPOPMAX (largest score, then largest name) pops the newest and the
-- next add, numbering after those left at that score, never overwrites one.
local function add(k)
  local c = redis.call('ZCOUNT', k, f(now), f(now))
  local batch = {}
  for i = 1, cost do
    batch[#batch + 1] = f(now)
    batch[#batch + 1] = f(now) .. '-' .. string.format('%012d', c + i)
    if #batch >= 1000 or i == cost then
      redis.call('ZADD', k, unpack(batch))
      batch = {}
    end
  end
end
local reason, retry = 0, 0
if refund then
  redis.call('ZPOPMAX', KEYS[1], cost)
  redis.call('ZPOPMAX', KEYS[2], cost)
  n, na = redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2])
elseif n + cost > limit then reason, retry = 1, score_at(KEYS[1], n + cost - limit - 1) + period - now
elseif na + cost > al then
  add(KEYS[1])
  n = n + cost
  reason, retry = 2, score_at(KEYS[2], na + cost - al - 1) + period - now
  if n + cost > limit then retry = max(retry, score_at(KEYS[1], n + cost - limit - 1) + period - now) end
else
  add(KEYS[1])
  add(KEYS[2])
  n, na = n + cost, na + cost
end
local reset = 0
if n > 0 then reset = score_at(KEYS[1], -1) + period - now end
local remaining, ttl = max(0, min(limit - n, al - na)), period
redis.call('PEXPIRE', KEYS[2], ceil(ttl / 1000) + 1000)
redis.call('PEXPIRE', KEYS[1], ceil(min(ttl, maxus) / 1000) + 1000)
-- The reply: ceil(min(reset, maxus)), ceil(min(retry, maxus)) (retry is mostly 0).
return {reason, remaining, ceil(maxus < reset and maxus or reset), retry == 0 and 0 or ceil(min(retry, maxus))}
