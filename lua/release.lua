-- Returns an order's unit to stock, once: only while that order is still the
-- holder, so a late release of an old order never frees a newer one, and
-- racing releases (expiry, cancel, sweeper, retries) free the unit once.
--
-- KEYS[1] fs:{S}:stock:<item>
-- KEYS[2] fs:{S}:holders
-- KEYS[3] fs:{S}:orders
-- KEYS[4] fs:{S}:unconfirmed
-- ARGV    order id, sale id, item id, the restock channel
--
-- Returns 1 when the unit went back, 0 when the order held nothing (any more).
-- Publishes "<sale> <item>" on the restock channel so that sold-out markers
-- clear. The hold record "<shopper> <item> <reservedAtMs>" is lib/stock.c's.

local rec = redis.call('HGET', KEYS[3], ARGV[1])
if not rec then
	return 0
end
local shopper, item = string.match(rec, '^(%S+) (%S+) ')
if item ~= ARGV[3] then
	return redis.error_reply('release: order ' .. ARGV[1] .. ' holds item ' .. tostring(item))
end

redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
if redis.call('HGET', KEYS[2], shopper) == ARGV[1] then
	redis.call('HDEL', KEYS[2], shopper)
end
redis.call('INCR', KEYS[1])
redis.call('PUBLISH', ARGV[4], ARGV[2] .. ' ' .. ARGV[3])
return 1
