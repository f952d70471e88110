-- Takes one unit of an item at one place of a sale (one shard of the item):
-- at most one live hold per shopper per sale. Every key carries the place's
-- hash tag, so in a Redis Cluster the whole script runs in one slot.
--
-- KEYS[1] fs:{T}:stock:<item>  units left here (absent: the item has no shard here)
-- KEYS[2] fs:{T}:holders       shopper -> order id, of the shoppers whose home is T
-- KEYS[3] fs:{T}:orders        order id -> "<shopper> <item> <reservedAtMs>"
-- KEYS[4] fs:{T}:unconfirmed   order ids not yet confirmed by PostgreSQL, by reservedAtMs
-- KEYS[5] fs:{T}:sale          sale settings ("window": payment window in seconds,
--                              "ends": the sale's end in ms, when it was closed or moved,
--                              "starts": the sale's start in ms; both compared with
--                              Redis' TIME, the one clock every purchase host shares)
-- ARGV    shopper, order id, hold record (written by lib/stock.c, the format's
--         owner), now in ms, the payment window when the sale has none,
--         the deadline in ms (by the caller's clock) after which the caller
--         may have given up on this call, and the mode: "guard" (the default) when T is the
--         shopper's home (check and set its guard here too), "take" when the
--         guard lives at another place (lib/stock_reserve.c claims it with guard.lua)
--
-- Returns {1, orderId, windowSeconds, unitsLeft} when reserved,
-- {2, existingOrderId} when the shopper already holds a unit of this sale,
-- {3} when this shard is empty (other shards may have units), {0} when the
-- sale has ended, {-1} when the item is not in the sale,
-- {-2} when it runs past the deadline: the caller may have answered "try again" and
-- released the order id already, so a late hold would be a ghost; {-3} before
-- the sale's start by Redis' clock (a purchase host whose clock runs ahead
-- let it through: it must not sell early).

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now > tonumber(ARGV[6]) then
	return {-2}
end
local times = redis.call('HMGET', KEYS[5], 'starts', 'ends')
local starts, ends = tonumber(times[1]), tonumber(times[2])
if starts and now < starts then
	return {-3}
end

local guard = ARGV[7] ~= 'take'
if guard then
	local held = redis.call('HGET', KEYS[2], ARGV[1])
	if held then
		return {2, held}
	end
end

-- A sale closed early (flashsale-admin sale close) sells nothing more, even
-- to a purchase URL signed for a later end.
if ends and now >= ends then
	return {0}
end

local left = redis.call('GET', KEYS[1])
if not left then
	return {-1}
end
if tonumber(left) <= 0 then
	return {3}
end

left = redis.call('DECR', KEYS[1])
if guard then
	redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[2])
local window = tonumber(redis.call('HGET', KEYS[5], 'window')) or tonumber(ARGV[5])
return {1, ARGV[2], window, left}
