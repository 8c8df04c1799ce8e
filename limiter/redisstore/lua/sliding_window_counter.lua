-- throttled: sliding_window_counter decision for the client key ARGV[8].
-- KEYS: the bucket (a hash, field ARGV[8]).
-- ARGV: now_us ("" = Redis TIME), limit, period_us, capacity, cost,
--       multiplier, refund ("1" = give cost back), client key.
-- Reply: {reason (0 allowed, 1 over_quota, 2 shed), remaining, reset_us, retry_us}.
-- It mirrors limiter/windows.go operation by operation. It runs after part/prelude.lua and before part/store.lua
-- (scripts.go joins them; ScriptSource is the whole script). The TTL rule (refill time in ms + 1 s)
-- and the reply are the same in every script; a test checks it.
local ws = floor(now / period) * period
-- State: the field ARGV[8] of the bucket KEYS[1], struct.pack('<dddddI4', q, a, c, d, ts, exp).
-- A field past its expiry is a fresh state, as the in-memory store forgets a key past its TTL.
local v, q, a, c, d, ts = redis.call('HGET', KEYS[1], ARGV[8])
local old = 0
if v then q, a, c, d, ts, old = struct.unpack('<dddddI4', v) end
if not v or old * 1000000 <= now then q, a, c, d, ts = 0, 0, 0, 0, ws end
if ts == ws then
elseif ts + period == ws then q, a, c, d, ts = 0, q, 0, c, ws
else q, a, c, d, ts = 0, 0, 0, 0, ws end
local w = (period - (now - ws)) / period
local est = a * w + q
local adm = d * w + c
local al = max(floor(limit * m + eps), cost)
local function retry_for(cur, prev, lim)
  local need = lim - cur - cost
  local at
  if need >= 0 then at = ts + period - need / prev * period
  else at = ts + 2 * period - (lim - cost) / cur * period end
  return max(0, at - now)
end
local reason, retry = 0, 0
if refund then
  q, c = max(0, q - cost), max(0, c - cost)
  est, adm = a * w + q, d * w + c
elseif est + cost > limit then reason, retry = 1, retry_for(q, a, limit)
elseif adm + cost > al then
  q = q + cost
  est = est + cost
  reason, retry = 2, retry_for(c, d, al)
  if est + cost > limit then retry = max(retry, retry_for(q, a, limit)) end
else
  q, c = q + cost, c + cost
  est, adm = est + cost, adm + cost
end
local remaining = max(0, floor(min(limit - est, al - adm) + eps))
local ttl = ws + 2 * period - now
local reset = 0
if q > 0 then reset = ttl elseif a > 0 then reset = ws + period - now end
local ms = ceil(min(ttl, maxus) / 1000) + 1000
local exp = min(ceil((now / 1000 + ms) / 1000), 4294967295)
local st = struct.pack('<dddddI4', q, a, c, d, ts, exp)
