-- The guard of a shopper whose unit was taken at another place than its
-- home (another shard of the item): one live hold per shopper per sale
-- even when the guard and the unit are in different Redis Cluster slots.
--
-- KEYS[1] fs:{T}:holders   shopper -> order id, at the shopper's home place T
-- ARGV    shopper, order id, "claim" or "drop", the deadline in ms (claim)
--
-- claim: {1} when the guard is now this order's, {2, orderId} when another
--        order holds it (the caller gives its unit back), {-2} past the
--        deadline: the caller may have given up and released the unit, so
--        a late guard would block the shopper with an order that holds nothing.
-- drop:  {1} when this order's guard went, {0} when the guard is not this order's.

local held = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[3] == 'drop' then
	if held == ARGV[2] then
		redis.call('HDEL', KEYS[1], ARGV[1])
		return {1}
	end
	return {0}
end

local now = redis.call('TIME')
if tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) > tonumber(ARGV[4]) then
	return {-2}
end
if held then
	if held == ARGV[2] then
		return {1}
	end
	return {2, held}
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {1}
