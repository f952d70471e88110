-- The window after which the pacer presumed an admitted place that had not
-- asked for its pass gone (issue 35): learned from the delays of the
-- places that did ask (lib/queue.h, fs_queue_pacer_expect), so each step
-- records the one it used and `flashsale-admin queue verify` checks the
-- step's budget with it. NULL: a step of a pacer from before, which always
-- waited FS_QUEUE_PACER_EXPECT_MS (5 s).
ALTER TABLE queue_admissions
	ADD COLUMN expect_ms integer CHECK (expect_ms > 0);
