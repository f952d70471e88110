-- A sale's Redis keys go once it has ended and its last order has closed:
-- the sweeper removes them and records when here, so it never looks at that
-- sale again and its work grows with the sales still in Redis only.
ALTER TABLE sales ADD COLUMN redis_cleared_at timestamptz;
CREATE INDEX sales_in_redis ON sales (id) WHERE redis_cleared_at IS NULL;
