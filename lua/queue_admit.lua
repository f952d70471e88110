-- The pacer's move of a sale's admission threshold (docs/QUEUE.md,
-- "Admission: the pacer"): admits the next count places in order, unless
-- another pacer holds the lease or moved the threshold since the caller
-- read it, so two pacers never both admit.
--
-- KEYS[1] fs:{S}:q:state   admitted, through, rate, at, soldout, multiple
-- KEYS[2] fs:{S}:q:places  sub -> place score
-- KEYS[3] fs:{S}:q:lease   the pacer's lease: its owner id
-- KEYS[4] fs:{S}:q:steps   zset: "<admitted>:<atMs>" -> admitted, a member
--                          per step that admitted (the pass script's claim
--                          window starts at its place's step)
-- ARGV    owner, expectedAdmitted, count (>= 0), nowMs, soldout (0/1),
--         rate (admissions/s of the last second x1000), lease (ms it is renewed for),
--         multiple (optional: the effective multiple the step used x1000)
--
-- Returns {admitted, through, movedMs} (through: the last admitted place's
-- score, "-1" none; movedMs: Redis' TIME when this call admitted places,
-- the clock orders are dated by, else 0); errors LEASE (held by another
-- pacer) or STALE <admitted>.

if redis.call('GET', KEYS[3]) ~= ARGV[1] then
	return redis.error_reply('LEASE held by another pacer')
end
local admitted = tonumber(redis.call('HGET', KEYS[1], 'admitted') or '0')
if admitted ~= tonumber(ARGV[2]) then
	return redis.error_reply('STALE ' .. admitted)
end
local target = admitted + tonumber(ARGV[3])
local total = redis.call('ZCARD', KEYS[2])
if target > total then
	target = total
end
local through = '-1'
if target > 0 then
	through = redis.call('ZRANGE', KEYS[2], target - 1, target - 1, 'WITHSCORES')[2]
end
if KEYS[4] and target > admitted then
	redis.call('ZADD', KEYS[4], target, target .. ':' .. ARGV[4])
end
redis.call('HSET', KEYS[1], 'admitted', target, 'through', through, 'rate', ARGV[6],
	'at', ARGV[4], 'soldout', ARGV[5])
if ARGV[8] then
	redis.call('HSET', KEYS[1], 'multiple', ARGV[8])
end
redis.call('PEXPIRE', KEYS[3], ARGV[7])
local moved = 0
if target > admitted then
	local t = redis.call('TIME')
	moved = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
return {target, through, moved}
