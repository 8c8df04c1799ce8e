-- throttled: token_bucket decision for the client key ARGV[8].
-- KEYS: the bucket (a hash, field ARGV[8]).
-- ARGV: now_us ("" = Redis TIME), limit, period_us, capacity, cost,
--       multiplier, refund ("1" = give cost back), client key.
-- Reply: {reason (0 allowed, 1 over_quota, 2 shed), remaining, reset_us, retry_us}.
-- It mirrors limiter/algorithms.go operation by operation. It runs after part/prelude.lua and before part/store.lua
-- (scripts.go joins them; ScriptSource is the whole script). The TTL rule (refill time in ms + 1 s)
-- and the reply are the same in every script; a test checks it.
-- max and min are comparisons on the path of every decision (part/prelude.lua).
local rate = limit / period
local arate = rate * m
local capa = burst * m
capa = cost > capa and cost or capa -- max(burst * m, cost)
-- State: the field ARGV[8] of the bucket KEYS[1], struct.pack('<dddI4', q, a, ts, exp), or
-- '<ddI4' without a (20 bytes, not 28) when a equals q, as it does at every m >= 1.
-- A field past its expiry is a fresh state, as the in-memory store forgets a key past its TTL.
local v, q, a, ts = redis.call('HGET', KEYS[1], ARGV[8])
local old = 0
if not v then
elseif #v == 20 then q, ts, old = struct.unpack('<ddI4', v); a = q
else q, a, ts, old = struct.unpack('<dddI4', v) end
if not v or old * 1000000 <= now then q, a, ts = burst, capa, now end
local el = now - ts
el = el > 0 and el or 0 -- max(0, now - ts)
q, a = q + el * rate, a + el * arate
q, a = q < burst and q or burst, a < capa and a or capa -- min(burst, q), min(capa, a)
if m >= 1 then a = q end
local reason, retry = 0, 0
if refund then q, a = min(burst, q + cost), min(capa, a + cost)
elseif q < cost then reason, retry = 1, (cost - q) / rate
elseif a < cost then q = q - cost; reason, retry = 2, max((cost - a) / arate, (cost - q) / rate)
else q, a = q - cost, a - cost end
local remaining = floor((a < q and a or q) + eps) -- floor(min(q, a) + eps)
local reset = (burst - q) / rate
local ttl = (capa - a) / arate
ttl = ttl > reset and ttl or reset -- max(reset, (capa - a) / arate)
local ms = ceil(min(ttl, maxus) / 1000) + 1000
local exp = ceil((now / 1000 + ms) / 1000)
exp = 4294967295 < exp and 4294967295 or exp -- min(exp, 4294967295)
ts = now > ts and now or ts -- max(ts, now)
local st
if a == q then st = struct.pack('<ddI4', q, ts, exp) else st = struct.pack('<dddI4', q, a, ts, exp) end
