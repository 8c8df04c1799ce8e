-- throttled: fixed_window decision for the client key ARGV[8].
-- KEYS: the bucket (a hash, field ARGV[8]).
-- ARGV: now_us ("" = Redis TIME), limit, period_us (-1: the UTC calendar month), capacity, cost,
--       multiplier, refund ("1" = give cost back), client key.
-- Reply: {reason (0 allowed, 1 over_quota, 2 shed), remaining, reset_us, retry_us}.
-- It mirrors limiter/algorithms.go operation by operation. It runs after part/prelude.lua and before part/store.lua
-- (scripts.go joins them; ScriptSource is the whole script). The TTL rule (refill time in ms + 1 s)
-- and the reply are the same in every script; a test checks it.
-- period_us -1 is the UTC calendar month (limiter.Month with AlignCalendar):
-- the civil date of now (H. Hinnant's days-to-civil), then its month's bounds.
local ws, we
if period < 0 then
  local day = 86400000000
  local z = floor(now / day)
  local doe = (z + 719468) % 146097
  local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
  local mp = floor((5 * doy + 2) / 153)
  local d = doy - floor((153 * mp + 2) / 5) + 1
  local y = yoe + floor((z + 719468) / 146097) * 400
  local mon = mp + 3
  if mon > 12 then mon, y = mon - 12, y + 1 end
  local len = ({31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31})[mon]
  if mon == 2 and (y % 4 == 0 and y % 100 ~= 0 or y % 400 == 0) then len = 29 end
  ws = (z - d + 1) * day
  we = ws + len * day
else
  ws = floor(now / period) * period
  we = ws + period
end
-- State: the field ARGV[8] of the bucket KEYS[1], struct.pack('<dddI4', q, c, ts, exp).
-- A field past its expiry is a fresh state, as the in-memory store forgets a key past its TTL.
local v, q, c, ts = redis.call('HGET', KEYS[1], ARGV[8])
local old = 0
if v then q, c, ts, old = struct.unpack('<dddI4', v) end
if not v or ts ~= ws or old * 1000000 <= now then q, c = 0, 0 end
local al = max(floor(limit * m + eps), cost)
local left = we - now
local reason = 0
if refund then q, c = max(0, q - cost), max(0, c - cost)
elseif q + cost > limit then reason = 1
elseif c + cost > al then q = q + cost; reason = 2
else q, c = q + cost, c + cost end
local retry = 0
if reason ~= 0 then retry = left end
local remaining, reset, ttl = max(0, min(limit - q, al - c)), left, left
local ms = ceil(min(ttl, maxus) / 1000) + 1000
local exp = min(ceil((now / 1000 + ms) / 1000), 4294967295)
local st = struct.pack('<dddI4', q, c, ws, exp)
