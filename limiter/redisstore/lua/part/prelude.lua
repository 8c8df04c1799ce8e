-- throttled: the prelude of every decision script (limiter/redisstore/scripts.go puts it first).
-- It reads ARGV; the clock is Redis TIME unless ARGV[1] gives one.
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
