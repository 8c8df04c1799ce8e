-- throttled: sliding_window_counter decision for the client key ARGV[8].
-- KEYS: the bucket (a hash, field ARGV[8]), the key where older versions kept the state.
-- ARGV: now_us ("" = Redis TIME), limit, period_us, capacity, cost,
--       multiplier, refund ("1" = give cost back), client key.
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
-- State: the field ARGV[8] of the bucket KEYS[1], struct.pack('<dddddI4', q, a, c, d, ts, exp).
-- The state an older version left at KEYS[2] (one string, struct.pack('<ddddd', …),
-- or a hash) is read once and deleted.
local v, q, a, c, d, ts = redis.call('HGET', KEYS[1], ARGV[8])
local old = 0
if v then q, a, c, d, ts, old = struct.unpack('<dddddI4', v)
else
  v = redis.pcall('GET', KEYS[2])
  if type(v) == 'string' and #v == 40 then q, a, c, d, ts = struct.unpack('<ddddd', v)
  elseif type(v) == 'table' then
    v = redis.call('HMGET', KEYS[2], 'q', 'a', 'c', 'd', 'ts')
    q, a, c, d, ts = tonumber(v[1]), tonumber(v[2]), tonumber(v[3]), tonumber(v[4]), tonumber(v[5])
  end
  if v then redis.call('DEL', KEYS[2]) end
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
local ms = math.ceil(math.min(ttl, maxus) / 1000) + 1000
local exp = math.min(math.ceil((now / 1000 + ms) / 1000), 4294967295)
local st = struct.pack('<dddddI4', q, a, c, d, ts, exp)
-- Store (the same in every script): the field, with its expiry in whole
-- seconds; the bucket's TTL covers its latest field; every 8th new field
-- sweeps the bucket's expired fields (a sample of them in a big bucket).
local pttl = math.ceil(exp * 1000 - now / 1000)
if redis.call('HSET', KEYS[1], ARGV[8], st) == 1 then
  local n = redis.call('HLEN', KEYS[1])
  if n == 1 then redis.call('PEXPIRE', KEYS[1], pttl)
  else
    redis.call('PEXPIRE', KEYS[1], pttl, 'GT')
    if n % 8 == 0 then
      local all
      if n > 128 then all = redis.call('HRANDFIELD', KEYS[1], 16, 'WITHVALUES')
      else all = redis.call('HGETALL', KEYS[1]) end
      local dead = {}
      for i = 2, #all, 2 do
        if struct.unpack('<I4', all[i], #all[i] - 3) * 1000000 < now then dead[#dead + 1] = all[i - 1] end
      end
      if #dead > 0 then redis.call('HDEL', KEYS[1], unpack(dead)) end
    end
  end
elseif exp > old then redis.call('PEXPIRE', KEYS[1], pttl, 'GT') end
return {reason, remaining, math.ceil(math.min(reset, maxus)), math.ceil(math.min(retry, maxus))}
