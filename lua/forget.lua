-- Removes every key of a sale that has ended and whose last order closed,
-- unless a hold is still unconfirmed (an order on its way, or a ghost the
-- sweeper has yet to close): then nothing changes and the next run retries.
--
-- KEYS[1] fs:{S}:unconfirmed
-- KEYS[2..] fs:{S}:stock:<item>..., fs:{S}:holders, fs:{S}:orders, fs:{S}:sale, fs:{S}:doubt
--
-- Returns 1 when the keys are gone, 0 when holds were still on their way.

if redis.call('ZCARD', KEYS[1]) > 0 then
	return 0
end
redis.call('UNLINK', unpack(KEYS))
return 1
