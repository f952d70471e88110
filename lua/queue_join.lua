-- A shopper joins a sale's waiting room (docs/QUEUE.md): one place per
-- account, the same one for every repeat. Every key carries the sale's first
-- place tag {S}, so in a Redis Cluster the whole script runs in one slot.
--
-- KEYS[1] fs:{S}:q:places   zset: sub -> place score
-- KEYS[2] fs:{S}:q:late     string: n of the last late joiner
-- KEYS[3] fs:{S}:q:journal  list: "<sub> <score> <joinedAtMs>" per new place
-- KEYS[4] fs:{S}:q:state    hash: soldout (the pacer's); lateAt (the
--                            date of the last late place, written here)
-- KEYS[5] fs:{S}:q:passes   zset: sub -> pass expiry (ms)
-- ARGV    sub, nowMs ("": Redis' clock, TIME: the one clock that decides
--         whether a join is before the opening, whatever the clock of the
--         handler that sent it; a number: a test's clock),
--         draw (the pre-opening score, decimal, below 2^52),
--         preMs (joining opens), opensMs (the sale opens: the draw ends),
--         endsMs (the sale ends): the caller's view of the sale, read from
--         PostgreSQL (lib/queue_conf.c), so no conf key needs keeping in step;
--         sync ("1": the caller WAITs for a replica after: a place found
--         again is written again, HSET state synced, so that the WAIT covers
--         it; the answer before may have been a 503 whose WAIT failed)
--
-- Returns {"OK", score, rank, added}: rank is -1 before the opening (the
-- draw is secret until then), added 1 when the place is new; {"NOT_YET"}
-- before preMs, {"ENDED"} from endsMs on, {"CLOSED"} for a new place
-- after the opening while nothing can be sold (sold out, no pass
-- outstanding): a place then would only wait for nothing. A place taken
-- earlier is answered as ever.

local sub, now = ARGV[1], tonumber(ARGV[2])
if not now then
	local t = redis.call('TIME')
	now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local pre, opens, ends = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])

if now < pre then
	return {'NOT_YET'}
end
if now >= ends then
	return {'ENDED'}
end

local score = redis.call('ZSCORE', KEYS[1], sub)
local added = 0
if not score then
	if now >= opens and redis.call('HGET', KEYS[4], 'soldout') == '1' and
	    redis.call('ZCOUNT', KEYS[5], '(' .. string.format('%.0f', now), '+inf') == 0 then
		return {'CLOSED'}
	end
	local at = now
	if now < opens then
		score = ARGV[3]
	else
		-- 2^52 + n: exact in a double, printed without an exponent.
		score = string.format('%.0f', 4503599627370496 + redis.call('INCR', KEYS[2]))
		-- Late numbers go in the order the scripts run, but each handler
		-- read its clock before: a late place is dated at the previous
		-- late place's time when that is later, so that the dates keep
		-- the numbers' order (queue verify checks it).
		local last = tonumber(redis.call('HGET', KEYS[4], 'lateAt'))
		if last and last > at then
			at = last
		end
		redis.call('HSET', KEYS[4], 'lateAt', string.format('%.0f', at))
	end
	redis.call('ZADD', KEYS[1], 'NX', score, sub)
	redis.call('RPUSH', KEYS[3], sub .. ' ' .. score .. ' ' .. string.format('%.0f', at))
	added = 1
elseif ARGV[7] == '1' then
	redis.call('HSET', KEYS[4], 'synced', string.format('%.0f', now))
end

local rank = -1
if now >= opens then
	rank = redis.call('ZRANK', KEYS[1], sub)
end
return {'OK', tonumber(score), rank, added}
