-- Drops the first n entries of a sale's join journal once the pacer has
-- copied them to PostgreSQL, unless another pacer holds the lease: that
-- one may have copied and dropped them already, and a second drop would
-- lose entries nobody copied.
--
-- KEYS[1] fs:{S}:q:journal  "<sub> <score> <joinedAtMs>" per new place (appended at the tail)
-- KEYS[2] fs:{S}:q:lease    the pacer's lease: its owner id
-- ARGV    owner, n, lease (ms it is renewed for)
--
-- Returns the entries left; error LEASE.

if redis.call('GET', KEYS[2]) ~= ARGV[1] then
	return redis.error_reply('LEASE held by another pacer')
end
redis.call('LTRIM', KEYS[1], tonumber(ARGV[2]), -1)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return redis.call('LLEN', KEYS[1])
