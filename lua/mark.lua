-- Rewrites one hold record, only while it is still what the caller read:
-- what the record says of its order and the broker changes (lib/stock.c,
-- the format's owner: " sent" goes once the broker acknowledged the order
-- to a second publication), and a hold released meanwhile never comes back.
--
-- KEYS[1] fs:{T}:orders
-- ARGV    order id, the record as read, the new record
--
-- Returns 1 when rewritten, 0 when the record is not (any more) that one.

if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then
	return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
