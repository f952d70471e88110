-- The layout of a sale (its places and sharded items) and whether it is
-- loaded, read by lib/stock_batch.c inside a pipeline of reservations: the
-- same answer as the HMGET of lib/stock.c's fs_stock_layout_read, which a
-- stock without scripts (flashsale-admin's) reads them with: keep the two
-- in step.
--
-- KEYS[1] fs:{S}:sale   "window" (set by every warm: the sale is loaded),
--                       "places" and "sharded" (see lib/stock.c)
--
-- Returns {window, places, sharded}, each false (nil) when absent.

return redis.call('HMGET', KEYS[1], 'window', 'places', 'sharded')
