-- The clock of the Redis node that holds a sale's waiting room (ms): the
-- one clock its joins are decided drawn or late by (queue_join.lua), its
-- passes dated by (queue_pass.lua) and its seed shown by. The pacer steps
-- the sale at it and flashsale-sale shows the seed by it, so that no host
-- whose own clock runs ahead or behind decides the opening. Writes nothing.
--
-- KEYS[1] fs:{S}:q:state   (names the node: any key of the sale's tag {S})
--
-- Returns Redis' TIME in ms.

local t = redis.call('TIME')
return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
