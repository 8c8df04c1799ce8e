-- throttled: gcra decision for the client key ARGV[8].
-- KEYS: the bucket (a hash, field ARGV[8]).
-- ARGV: now_us ("" = Redis TIME), limit, period_us, capacity, cost,
--       multiplier, refund ("1" = give cost back), client key.
-- Reply: {reason (0 allowed, 1 over_quota, 2 shed), remaining, reset_us, retry_us}.
-- It mirrors limiter/algorithms.go operation by operation. It runs after part/prelude.lua and before part/store.lua
-- (scripts.go joins them; ScriptSource is the whole script). The TTL rule (refill time in ms + 1 s)
-- and the reply are the same in every script; a test checks it.
-- max and min are comparisons on the path of every decision (part/prelude.lua).
local t = period / limit
local ta = t / m
local tol = t * burst
local tola = burst * m
tola = ta * (cost > tola and cost or tola) -- ta * max(burst * m, cost)
-- q, a: theoretical arrival times relative to ts, the last update (see gcra in
-- algorithms.go: absolute µs in a double are too coarse at high rates).
-- State: the field ARGV[8] of the bucket KEYS[1], struct.pack('<dddI4', bq, ba, ts, exp), or
-- '<ddI4' without ba (20 bytes, not 28) when ba equals bq, as it does at every m >= 1.
-- A field past its expiry is a fresh state, as the in-memory store forgets a key past its TTL.
local v, bq, ba, ts = redis.call('HGET', KEYS[1], ARGV[8])
local old = 0
if not v then
elseif #v == 20 then bq, ts, old = struct.unpack('<ddI4', v); ba = bq
else bq, ba, ts, old = struct.unpack('<dddI4', v) end
if not v or old * 1000000 <= now then bq, ba, ts = 0, 0, now end
local el = now - ts
el = el > 0 and el or 0 -- max(0, now - ts)
bq, ba = bq - el, ba - el
bq, ba = bq > 0 and bq or 0, ba > 0 and ba or 0 -- max(0, bq - el), max(0, ba - el)
if m >= 1 then ba = bq end
local nq, na = bq + t * cost, ba + ta * cost
local reason, retry = 0, 0
if refund then bq, ba = max(0, bq - t * cost), max(0, ba - ta * cost)
elseif nq - tol > eps * t then reason, retry = 1, nq - tol
elseif na - tola > eps * ta then bq = nq; reason, retry = 2, max(na - tola, nq + t * cost - tol)
else bq, ba = nq, na end
local rq, ra = (tol - bq) / t, (tola - ba) / ta
local remaining = floor((ra < rq and ra or rq) + eps) -- floor(min(rq, ra) + eps)
remaining = remaining > 0 and remaining or 0 -- max(0, remaining)
local reset, ttl = bq, ba > bq and ba or bq -- ttl = max(bq, ba)
local ms = ceil(min(ttl, maxus) / 1000) + 1000
local exp = ceil((now / 1000 + ms) / 1000)
exp = 4294967295 < exp and 4294967295 or exp -- min(exp, 4294967295)
ts = now > ts and now or ts -- max(ts, now)
local st
if ba == bq then st = struct.pack('<ddI4', bq, ts, exp) else st = struct.pack('<dddI4', bq, ba, ts, exp) end
