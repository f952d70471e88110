-- An admitted shopper's pass (docs/QUEUE.md): issued once, with an expiry
-- that never changes (a repeat answers the same). Every key carries the
-- sale's first place tag {S}: one slot.
--
-- KEYS[1] fs:{S}:q:places  zset: sub -> place score
-- KEYS[2] fs:{S}:q:state   hash: admitted, soldout ... (the pacer's)
-- KEYS[3] fs:{S}:q:passes  zset: sub -> pass expiry (ms)
-- KEYS[4] fs:{S}:q:steps   zset: "<admitted>:<atMs>" -> admitted, one per
--                          admission step (lua/queue_admit.lua)
-- KEYS[5] fs:{S}:q:seen    zset: sub -> when its page last asked for its
--                          pass (ms): a page that holds an unused pass asks
--                          again every few seconds, and the pacer stops
--                          counting a pass whose page went quiet
-- KEYS[6] fs:{S}:q:claims  zset: sub -> how long after its admission the
--                          place asked for its pass (ms), written when a
--                          pass is issued: the pacer presumes a place gone
--                          after twice the 90th percentile of these
--                          (optional: an older caller passes 5 keys)
-- ARGV    sub, nowMs ("": Redis' clock, TIME, the one every origin shares:
--         a pass's expiry, its claim and its page's last ask are compared
--         with the pacer's steps, dated by the same clock; a number is a
--         test's clock), passMs (how long a pass lasts), endsMs (the
--         sale's end), claimMs (how long an admitted place has to ask for
--         its pass), sync ("1": the caller WAITs for a replica after: a pass
--         found again is written again, HSET state synced, so that the WAIT
--         covers it; the answer before may have been a 503 whose WAIT
--         failed), opensMs (optional: before it every rank answered is -1,
--         as the draw is secret until the opening)
--
-- Returns {"OK", rank, admitted, expiresMs, issuedNow 1/0}; {"NOT_IN_QUEUE"};
-- {"NOT_YET", rank, admitted} (rank >= admitted); {"SOLD_OUT", rank,
-- admitted} (sold out and no pass issued); {"LAPSED", rank, admitted}
-- (the pass issued has expired, or the place was admitted more than
-- claimMs ago and never asked: its turn passed to the next place);
-- {"ENDED"} from endsMs on.

local sub, now = ARGV[1], tonumber(ARGV[2])
if not now then
	local t = redis.call('TIME')
	now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

if now >= tonumber(ARGV[4]) then
	return {'ENDED'}
end
local rank = redis.call('ZRANK', KEYS[1], sub)
if not rank then
	return {'NOT_IN_QUEUE'}
end
-- The rank answered: none before the opening (by this script's clock).
local shown = rank
if ARGV[7] and now < tonumber(ARGV[7]) then
	shown = -1
end
local st = redis.call('HMGET', KEYS[2], 'admitted', 'soldout')
local admitted = tonumber(st[1]) or 0

local expires = redis.call('ZSCORE', KEYS[3], sub)
if expires then
	expires = tonumber(expires)
	if expires <= now then
		return {'LAPSED', shown, admitted}
	end
	if KEYS[5] then
		redis.call('ZADD', KEYS[5], string.format('%.0f', now), sub)
	end
	if ARGV[6] == '1' then
		redis.call('HSET', KEYS[2], 'synced', string.format('%.0f', now))
	end
	return {'OK', shown, admitted, expires, 0}
end
if rank >= admitted then
	return {'NOT_YET', shown, admitted}
end
if st[2] == '1' then
	return {'SOLD_OUT', shown, admitted}
end
-- The step that admitted this place: the first whose count passed its rank.
local claim = tonumber(ARGV[5])
local at
if claim and KEYS[4] then
	local step = redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. rank, '+inf', 'LIMIT', 0, 1)[1]
	at = step and tonumber(string.match(step, ':(%d+)$'))
	if at and now > at + claim then
		return {'LAPSED', shown, admitted}
	end
end
expires = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[3], 'NX', string.format('%.0f', expires), sub)
if KEYS[6] and at then
	redis.call('ZADD', KEYS[6], 'NX', string.format('%.0f', math.max(now - at, 0)), sub)
end
if KEYS[5] then
	redis.call('ZADD', KEYS[5], string.format('%.0f', now), sub)
end
return {'OK', shown, admitted, expires, 1}
