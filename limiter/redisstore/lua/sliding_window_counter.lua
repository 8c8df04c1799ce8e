-- throttled: sliding_window_counter decision for KEYS[1].
-- ARGV: now_us ("" = Redis TIME), limit, period_us, capacity, cost,
--       multiplier, refund ("1" = give cost back).
-- Reply: {reason (0 allowed, 1 over_quota, 2 shed), remaining, reset_us, retry_us}.
-- It mirrors limiter/windows.go operation by operation. The prelude (up to "local eps")
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
local ws = math.floor(now / period) * period
-- State: one string, struct.pack('<ddddd', q, a, c, d, ts); a hash
-- {q, a, c, d, ts} written by older versions is read once and replaced.
local v, q, a, c, d, ts = redis.pcall('GET', KEYS[1])
if type(v) == 'string' and #v == 40 then q, a, c, d, ts = struct.unpack('<ddddd', v)
elseif type(v) == 'table' then
  v = redis.call('HMGET', KEYS[1], 'q', 'a', 'c', 'd', 'ts')
  q, a, c, d, ts = tonumber(v[1]), tonumber(v[2]), tonumber(v[3]), tonumber(v[4]), tonumber(v[5])
  redis.call('DEL', KEYS[1])
end
if c == nil or d == nil then c, d = q, a end -- state of a version that counted admitted units only
if q == nil or a == nil or ts == nil then q, a, c, d, ts = 0, 0, 0, 0, ws
elseif ts == ws then
elseif ts + period == ws then q, a, c, d, ts = 0, q, 0, c, ws
else q, a, c, d, ts = 0, 0, 0, 0, ws end
local w = (period - (now - ws)) / period
local est = a * w + q
local adm = d * w + c
local al = math.max(math.floor(limit * m + eps), cost)
local function retry_for(cur, prev, lim)
  local need = lim - cur - cost
  local at
  if need >= 0 then at = ts + period - need / prev * period
  else at = ts + 2 * period - (lim - cost) / cur * period end
  return math.max(0, at - now)
end
local reason, retry = 0, 0
if refund then
  q, c = math.max(0, q - cost), math.max(0, c - cost)
  est, adm = a * w + q, d * w + c
elseif est + cost > limit then reason, retry = 1, retry_for(q, a, limit)
elseif adm + cost > al then
  q = q + cost
  est = est + cost
  reason, retry = 2, retry_for(c, d, al)
  if est + cost > limit then retry = math.max(retry, retry_for(q, a, limit)) end
else
  q, c = q + cost, c + cost
  est, adm = est + cost, adm + cost
end
local remaining = math.max(0, math.floor(math.min(limit - est, al - adm) + eps))
local ttl = ws + 2 * period - now
local reset = 0
if q > 0 then reset = ttl elseif a > 0 then reset = ws + period - now end
redis.call('SET', KEYS[1], struct.pack('<ddddd', q, a, c, d, ts), 'PX', math.ceil(math.min(ttl, maxus) / 1000) + 1000)
return {reason, remaining, math.ceil(math.min(reset, maxus)), math.ceil(math.min(retry, maxus))}
