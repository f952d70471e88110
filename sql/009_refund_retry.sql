-- A refund the provider refused is ours to retry: flashsale-expire asks the
-- provider again, with backoff, until it is made (the idempotency key
-- refund_<paymentId> makes every try the same one refund at the provider).
-- refund_attempts counts the tries that failed, refund_tried_at says when
-- the last one did, refund_error why; after FLASHSALE_REFUND_ALERT_AFTER
-- failures an operator is told (flashsale_refunds_failing, sale watch).
ALTER TABLE payments
	ADD COLUMN refund_attempts integer NOT NULL DEFAULT 0 CHECK (refund_attempts >= 0),
	ADD COLUMN refund_tried_at timestamptz,
	ADD COLUMN refund_error    text CHECK (length(refund_error) <= 256);
