-- The waiting room (docs/QUEUE.md). A sale with a queue has its settings
-- and the draw's seed (secret until the opening; its SHA-256 is published
-- from creation). queue_places holds one row per account that joined,
-- copied from Redis by the pacer; queue_admissions one row per pacer step
-- that admitted places, written before Redis' threshold moves, so that
-- `flashsale-admin queue verify` can check the whole order from here.
ALTER TABLE sales
	ADD COLUMN queue      jsonb CHECK (queue IS NULL OR jsonb_typeof(queue) = 'object'),
	ADD COLUMN queue_seed bytea CHECK (queue_seed IS NULL OR length(queue_seed) = 32),
	ADD CHECK ((queue IS NULL) = (queue_seed IS NULL));

CREATE TABLE queue_places (
	sale_id   bigint NOT NULL REFERENCES sales (id),
	user_id   text NOT NULL CHECK (length(user_id) BETWEEN 1 AND 64),
	-- Below 2^52: the draw of a place taken before the opening; 2^52 + n:
	-- the n-th place taken after it.
	score     bigint NOT NULL CHECK (score >= 0 AND score < 9007199254740992),
	drawn     boolean NOT NULL,
	joined_at timestamptz NOT NULL,
	PRIMARY KEY (sale_id, user_id),
	CHECK (drawn = (score < 4503599627370496))
);
CREATE INDEX queue_places_order ON queue_places (sale_id, score, user_id);

CREATE TABLE queue_admissions (
	sale_id  bigint NOT NULL REFERENCES sales (id),
	step     bigint NOT NULL CHECK (step >= 1),
	-- Places admitted in all after this step, and the last one's score.
	admitted bigint NOT NULL CHECK (admitted >= 1),
	through  bigint NOT NULL CHECK (through >= 0),
	at       timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (sale_id, step)
);
