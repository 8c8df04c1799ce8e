-- throttled: the end of every script that keeps its state in a field of a bucket
-- (limiter/redisstore/scripts.go appends it). It needs st (the packed state), exp
-- (its expiry, whole seconds), old (the expiry it had), now and the reply's values.
-- Store (the same in every script): the field, with its expiry in whole
-- seconds; the bucket's TTL covers its latest field, up to the next multiple
-- of grid seconds (redisstore.BucketTTLGrid), so a key that comes back
-- extends it at most once a grid; every 8th new field sweeps the bucket's
-- expired fields (a sample of them in a big bucket).
local grid = 4
local gexp = ceil(exp / grid) * grid
if redis.call('HSET', KEYS[1], ARGV[8], st) == 1 then
  local pttl = ceil(gexp * 1000 - now / 1000)
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
elseif gexp > ceil(old / grid) * grid then redis.call('PEXPIRE', KEYS[1], ceil(gexp * 1000 - now / 1000), 'GT') end
-- The reply: ceil(min(reset, maxus)), ceil(min(retry, maxus)) (retry is mostly 0).
return {reason, remaining, ceil(maxus < reset and maxus or reset), retry == 0 and 0 or ceil(min(retry, maxus))}
