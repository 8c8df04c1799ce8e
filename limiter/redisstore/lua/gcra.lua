-- throttled: gcra decision for the client key ARGV[8].
-- KEYS: the bucket (a hash, field ARGV[8]).
-- ARGV: now_us ("" = Redis TIME), limit, period_us, capacity, cost,
--       multiplier, refund ("1" = give cost back), client key.
-- Reply: {reason (0 allowed, 1 over_quota, 2 shed), remaining, reset_us, retry_us}.
-- It mirrors limiter/algorithms.go operation by operation. It runs after part/prelude.lua and before part/store.lua
-- (scripts.go joins them; ScriptSource is the whole script). The TTL rule (refill time in ms + 1 s)
-- and the reply are the same in every script; a test checks it.
local t = period / limit
local ta = t / m
local tol = t * burst
local tola = ta * math.max(burst * m, cost)
-- q, a: theoretical arrival times relative to ts, the last update (see gcra in
-- algorithms.go: absolute µs in a double are too coarse at high rates).
-- State: the field ARGV[8] of the bucket KEYS[1], struct.pack('<dddI4', bq, ba, ts, exp).
-- A field past its expiry is a fresh state, as the in-memory store forgets a key past its TTL.
local v, bq, ba, ts = redis.call('HGET', KEYS[1], ARGV[8])
local old = 0
if v then bq, ba, ts, old = struct.unpack('<dddI4', v) end
if not v or old * 1000000 <= now then bq, ba, ts = 0, 0, now end
local el = math.max(0, now - ts)
bq, ba = math.max(0, bq - el), math.max(0, ba - el)
if m >= 1 then ba = bq end
local nq, na = bq + t * cost, ba + ta * cost
local reason, retry = 0, 0
if refund then bq, ba = math.max(0, bq - t * cost), math.max(0, ba - ta * cost)
elseif nq - tol > eps * t then reason, retry = 1, nq - tol
elseif na - tola > eps * ta then bq = nq; reason, retry = 2, math.max(na - tola, nq + t * cost - tol)
else bq, ba = nq, na end
local remaining = math.max(0, math.floor(math.min((tol - bq) / t, (tola - ba) / ta) + eps))
local reset, ttl = bq, math.max(bq, ba)
local ms = math.ceil(math.min(ttl, maxus) / 1000) + 1000
local exp = math.min(math.ceil((now / 1000 + ms) / 1000), 4294967295)
local st = struct.pack('<dddI4', bq, ba, math.max(ts, now), exp)
