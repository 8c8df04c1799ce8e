-- throttled: gcra decision for KEYS[1].
-- ARGV: now_us ("" = Redis TIME), limit, period_us, capacity, cost,
--       multiplier, refund ("1" = give cost back).
-- Reply: {reason (0 allowed, 1 over_quota, 2 shed), remaining, reset_us, retry_us}.
-- It mirrors limiter/algorithms.go operation by operation. The prelude (up to "local eps")
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
local t = period / limit
local ta = t / m
local tol = t * burst
local tola = ta * math.max(burst * m, cost)
local v = redis.call('HMGET', KEYS[1], 'q', 'a')
local sq, sa = tonumber(v[1]), tonumber(v[2])
if sq == nil or sa == nil then sq, sa = now, now end
local tq, tqa = math.max(sq, now), math.max(sa, now)
if m >= 1 then tqa = tq end
local nq, na = tq + t * cost, tqa + ta * cost
local reason, retry = 0, 0
if refund then tq, tqa = math.max(now, tq - t * cost), math.max(now, tqa - ta * cost)
elseif nq - now > tol then reason, retry = 1, nq - now - tol
elseif na - now > tola then tq = nq; reason, retry = 2, math.max(na - now - tola, nq + t * cost - now - tol)
else tq, tqa = nq, na end
local remaining = math.max(0, math.floor(math.min((tol - (tq - now)) / t, (tola - (tqa - now)) / ta) + eps))
redis.call('HSET', KEYS[1], 'q', tq, 'a', tqa)
local reset, ttl = tq - now, math.max(tq, tqa) - now
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl / 1000) + 1000)
return {reason, remaining, math.ceil(reset), math.ceil(retry)}
