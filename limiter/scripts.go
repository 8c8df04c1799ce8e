package limiter

import "github.com/redis/go-redis/v9"

// Each script decides for KEYS[1] with
//
//	ARGV = now_us ("" = read Redis TIME), limit, period_us, capacity, cost, multiplier,
//	       refund ("1": give cost back, as after a refusal by a later rule)
//
// and replies {reason, remaining, reset_us, retry_us} (all integers). They
// mirror algorithms.go operation by operation. Numbers passed to
// redis.call keep 17 significant digits (exact doubles); strings built with
// Lua's tostring or ".." would keep only 14, so the sliding log's f()
// formats its members. The prelude and the meters define no functions: a
// closure is made on every EVALSHA.
const luaPrelude = `
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
`

// luaFinish sets the TTL and replies; it ends every script.
const luaFinish = `
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl / 1000) + 1000)
return {reason, remaining, math.ceil(reset), math.ceil(retry)}
`

const luaTokenBucket = luaPrelude + `
local rate = limit / period
local arate = rate * m
local capa = math.max(burst * m, cost)
local v = redis.call('HMGET', KEYS[1], 'q', 'a', 'ts')
local q, a, ts = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
if q == nil or a == nil or ts == nil then q, a, ts = burst, capa, now end
local el = math.max(0, now - ts)
q = math.min(burst, q + el * rate)
a = math.min(capa, a + el * arate)
if m >= 1 then a = q end
local reason, retry = 0, 0
if refund then q, a = math.min(burst, q + cost), math.min(capa, a + cost)
elseif q < cost then reason, retry = 1, (cost - q) / rate
elseif a < cost then reason, retry = 2, (cost - a) / arate
else q, a = q - cost, a - cost end
local remaining = math.floor(math.min(q, a) + eps)
local reset = (burst - q) / rate
redis.call('HSET', KEYS[1], 'q', q, 'a', a, 'ts', math.max(ts, now))
local ttl = math.max(reset, (capa - a) / arate)
` + luaFinish

const luaGCRA = luaPrelude + `
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
elseif na - now > tola then reason, retry = 2, na - now - tola
else tq, tqa = nq, na end
local remaining = math.max(0, math.floor(math.min((tol - (tq - now)) / t, (tola - (tqa - now)) / ta) + eps))
redis.call('HSET', KEYS[1], 'q', tq, 'a', tqa)
local reset, ttl = tq - now, math.max(tq, tqa) - now
` + luaFinish

const luaLeakyBucket = luaPrelude + `
local rate = limit / period
local arate = rate * m
local capa = math.max(burst * m, cost)
local v = redis.call('HMGET', KEYS[1], 'q', 'a', 'ts')
local lq, la, ts = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
if lq == nil or la == nil or ts == nil then lq, la, ts = 0, 0, now end
local el = math.max(0, now - ts)
lq = math.max(0, lq - el * rate)
la = math.max(0, la - el * arate)
if m >= 1 then la = lq end
local reason, retry = 0, 0
if refund then lq, la = math.max(0, lq - cost), math.max(0, la - cost)
elseif lq + cost > burst then reason, retry = 1, (lq + cost - burst) / rate
elseif la + cost > capa then reason, retry = 2, (la + cost - capa) / arate
else lq, la = lq + cost, la + cost end
local remaining = math.max(0, math.floor(math.min(burst - lq, capa - la) + eps))
local reset = lq / rate
redis.call('HSET', KEYS[1], 'q', lq, 'a', la, 'ts', math.max(ts, now))
local ttl = math.max(reset, la / arate)
` + luaFinish

const luaFixedWindow = luaPrelude + `
local ws = math.floor(now / period) * period
local v = redis.call('HMGET', KEYS[1], 'q', 'ts')
local q, ts = tonumber(v[1]), tonumber(v[2])
if q == nil or ts ~= ws then q = 0 end
local al = math.max(math.floor(limit * m + eps), cost)
local left = ws + period - now
local reason = 0
if refund then q = math.max(0, q - cost)
elseif q + cost > limit then reason = 1
elseif q + cost > al then reason = 2
else q = q + cost end
local retry = 0
if reason ~= 0 then retry = left end
redis.call('HSET', KEYS[1], 'q', q, 'ts', ws)
local remaining, reset, ttl = math.max(0, math.min(limit, al) - q), left, left
` + luaFinish

const luaSlidingCounter = luaPrelude + `
local ws = math.floor(now / period) * period
local v = redis.call('HMGET', KEYS[1], 'q', 'a', 'ts')
local q, a, ts = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
if q == nil or a == nil or ts == nil then q, a, ts = 0, 0, ws
elseif ts == ws then
elseif ts + period == ws then q, a, ts = 0, q, ws
else q, a, ts = 0, 0, ws end
local w = (period - (now - ws)) / period
local est = a * w + q
local al = math.max(math.floor(limit * m + eps), cost)
local function retry_for(lim)
  local need = lim - q - cost
  local at
  if need >= 0 then at = ts + period - need / a * period
  else at = ts + 2 * period - (lim - cost) / q * period end
  return math.max(0, at - now)
end
local reason, retry = 0, 0
if refund then q = math.max(0, q - cost); est = a * w + q
elseif est + cost > limit then reason, retry = 1, retry_for(limit)
elseif est + cost > al then reason, retry = 2, retry_for(al)
else q = q + cost; est = est + cost end
local remaining = math.max(0, math.floor(math.min(limit, al) - est + eps))
local ttl = ws + 2 * period - now
local reset = 0
if q > 0 then reset = ttl elseif a > 0 then reset = ws + period - now end
redis.call('HSET', KEYS[1], 'q', q, 'a', a, 'ts', ts)
` + luaFinish

const luaSlidingLog = luaPrelude + `
local function f(x) return string.format('%.17g', x) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', f(now - period))
local n = redis.call('ZCARD', KEYS[1])
local al = math.max(math.floor(limit * m + eps), cost)
local function score_at(i)
  local r = redis.call('ZRANGE', KEYS[1], i, i, 'WITHSCORES')
  return tonumber(r[2])
end
local reason, retry = 0, 0
if refund then
  redis.call('ZPOPMAX', KEYS[1], cost)
  n = redis.call('ZCARD', KEYS[1])
elseif n + cost > limit then reason, retry = 1, score_at(n + cost - limit - 1) + period - now
elseif n + cost > al then reason, retry = 2, score_at(n + cost - al - 1) + period - now
else
  local batch = {}
  for i = 1, cost do
    batch[#batch + 1] = f(now)
    batch[#batch + 1] = f(now) .. '-' .. (n + i)
    if #batch >= 1000 or i == cost then
      redis.call('ZADD', KEYS[1], unpack(batch))
      batch = {}
    end
  end
  n = n + cost
end
local reset = 0
if n > 0 then reset = score_at(-1) + period - now end
local remaining, ttl = math.max(0, math.min(limit, al) - n), period
` + luaFinish

// luaSources are indexed by Algorithm.
var luaSources = [numAlgorithms]string{
	TokenBucket:          luaTokenBucket,
	GCRA:                 luaGCRA,
	FixedWindow:          luaFixedWindow,
	SlidingWindowLog:     luaSlidingLog,
	SlidingWindowCounter: luaSlidingCounter,
	LeakyBucket:          luaLeakyBucket,
}

// scripts are indexed by Algorithm, made once.
var scripts = func() (s [numAlgorithms]*redis.Script) {
	for i, src := range luaSources {
		s[i] = redis.NewScript(src)
	}
	return s
}()

// ScriptSource is the Lua source of an algorithm's script, for operators who
// preload scripts and for benchmarks with redis-benchmark. Its arguments are
// described at the top of scripts.go.
func ScriptSource(a Algorithm) string {
	if a >= numAlgorithms {
		return ""
	}
	return luaSources[a]
}
