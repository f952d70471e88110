-- What the status document of a sale's waiting room shows (docs/QUEUE.md),
-- read in one round trip; writes nothing. Keys in the sale's first place
-- tag {S}: one slot.
--
-- KEYS[1] fs:{S}:q:state   hash: admitted, through, rate (x1000), soldout, multiple (x1000)
-- KEYS[2] fs:{S}:q:places  zset: sub -> place score
-- KEYS[3] fs:{S}:q:passes  zset: sub -> pass expiry (ms)
-- ARGV    nowMs ("": Redis' clock, TIME: the one clock that decides the
--         opening, as in queue_join.lua; a number is a test's clock)
--
-- Returns {admitted, through, rateMilli, soldout, joined, drawn, passesOut,
-- multipleMilli (the pacer's effective multiple, 0 before its first step),
-- nowMs (the clock it read: the status document's serverTime, and whether
-- the opening has come, the seed with it)}: drawn counts the places below
-- 2^52 (taken before the opening), passesOut the passes whose expiry is
-- after nowMs.

local now = tonumber(ARGV[1])
if not now then
	local t = redis.call('TIME')
	now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local st = redis.call('HMGET', KEYS[1], 'admitted', 'through', 'rate', 'soldout', 'multiple')
return {
	tonumber(st[1]) or 0,
	tonumber(st[2]) or -1,
	tonumber(st[3]) or 0,
	tonumber(st[4]) or 0,
	redis.call('ZCARD', KEYS[2]),
	redis.call('ZCOUNT', KEYS[2], '-inf', '(4503599627370496'),
	redis.call('ZCOUNT', KEYS[3], '(' .. string.format('%.0f', now), '+inf'),
	tonumber(st[5]) or 0,
	now,
}
