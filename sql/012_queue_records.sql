-- What `flashsale-admin queue verify` needs to tell the legitimate from the
-- tampered (issue 35): a step the pacer recorded from Redis' count (Redis
-- ahead of PostgreSQL: a lost row, or a count changed by hand) is marked,
-- never taken for a paced step; and every pass an operator mints
-- (`flashsale-admin queue pass`) is recorded with who, when and why, so an
-- order made with one is told from an order of an account never admitted.
--
-- moved_at: when Redis moved the threshold, by Redis' clock (TIME in
-- queue_admit.lua, the clock reserve.lua dates orders by), so that an order
-- is compared with its admission on one clock, not the pacer's against
-- Redis'; NULL when the pacer stopped before writing it (`at` then).
ALTER TABLE queue_admissions
	ADD COLUMN from_redis boolean NOT NULL DEFAULT false,
	ADD COLUMN moved_at timestamptz;

-- No foreign key: a pass of a sale unknown here is recorded all the same
-- (it buys nothing, but someone minted it).
CREATE TABLE queue_operator_passes (
	sale_id    bigint NOT NULL,
	user_id    text NOT NULL CHECK (length(user_id) BETWEEN 1 AND 64),
	issued_by  text NOT NULL CHECK (length(issued_by) BETWEEN 1 AND 200),
	issued_at  timestamptz NOT NULL DEFAULT now(),
	expires_at timestamptz NOT NULL,
	reason     text NOT NULL CHECK (length(reason) BETWEEN 1 AND 500)
);
CREATE INDEX queue_operator_passes_sale ON queue_operator_passes (sale_id, user_id);
