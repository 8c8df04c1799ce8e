-- throttled: leaky_bucket decision for the client key ARGV[8].
-- KEYS: the bucket (a hash, field ARGV[8]).
-- ARGV: now_us ("" = Redis TIME), limit, period_us, capacity, cost,
--       multiplier, refund ("1" = give cost back), client key.
-- Reply: {reason (0 allowed, 1 over_quota, 2 shed), remaining, reset_us, retry_us}.
-- It mirrors limiter/algorithms.go operation by operation. It runs after part/prelude.lua and before part/store.lua
-- (scripts.go joins them; ScriptSource is the whole script). The TTL rule (refill time in ms + 1 s)
-- and the reply are the same in every script; a test checks it.
local rate = limit / period
local arate = rate * m
local capa = max(burst * m, cost)
-- State: the field ARGV[8] of the bucket KEYS[1], struct.pack('<dddI4', lq, la, ts, exp).
-- A field past its expiry is a fresh state, as the in-memory store forgets a key past its TTL.
local v, lq, la, ts = redis.call('HGET', KEYS[1], ARGV[8])
local old = 0
if v then lq, la, ts, old = struct.unpack('<dddI4', v) end
if not v or old * 1000000 <= now then lq, la, ts = 0, 0, now end
local el = max(0, now - ts)
lq = max(0, lq - el * rate)
la = max(0, la - el * arate)
if m >= 1 then la = lq end
local reason, retry = 0, 0
if refund then lq, la = max(0, lq - cost), max(0, la - cost)
elseif lq + cost > burst then reason, retry = 1, (lq + cost - burst) / rate
elseif la + cost > capa then lq = lq + cost; reason, retry = 2, max((la + cost - capa) / arate, (lq + cost - burst) / rate)
else lq, la = lq + cost, la + cost end
local remaining = max(0, floor(min(burst - lq, capa - la) + eps))
local reset = lq / rate
local ttl = max(reset, la / arate)
local ms = ceil(min(ttl, maxus) / 1000) + 1000
local exp = min(ceil((now / 1000 + ms) / 1000), 4294967295)
local st = struct.pack('<dddI4', lq, la, max(ts, now), exp)
