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
-- math's functions as locals: a global and a table lookup less per call.
-- Hot paths write max and min as comparisons instead (no call at all):
-- x > y and x or y is max(y, x) and x < y and x or y is min(y, x), to
-- the bit, NaN included, as Lua's math.max and math.min compare.
local min, max, floor, ceil = math.min, math.max, math.floor, math.ceil
local maxus = 9e15 -- limiter.MaxWait: the longest wait a reply says
local eps = 1e-9
