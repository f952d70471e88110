-- A hot item may spread its units over several Redis stock keys (shards),
-- each on its own Redis Cluster master; lib/stock.c owns how.
ALTER TABLE items ADD COLUMN shards integer NOT NULL DEFAULT 1 CHECK (shards BETWEEN 1 AND 16);
