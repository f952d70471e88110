-- Payments from the payment provider: one checkout session per order, the
-- provider's events applied once each, late payments refunded. An order
-- becomes PAID only here, by a signed event of the provider (lib/payments.c).

-- One row per provider payment (a checkout session and its payment). state:
-- OPEN (session created, nothing heard), FAILED (declined; the shopper may
-- still pay until the session expires), SUCCEEDED (the money is ours and
-- the order PAID by it), REFUND_PENDING (the money came for an order that
-- could not take it: refund owed), REFUNDED.
CREATE TABLE payments (
	payment_id    text PRIMARY KEY CHECK (length(payment_id) BETWEEN 1 AND 64),
	session_id    text NOT NULL UNIQUE CHECK (length(session_id) BETWEEN 1 AND 64),
	order_id      uuid NOT NULL REFERENCES orders (id),
	redirect_url  text NOT NULL CHECK (length(redirect_url) BETWEEN 1 AND 512),
	amount_minor  bigint NOT NULL CHECK (amount_minor >= 0),
	currency      char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
	state         text NOT NULL
	              CHECK (state IN ('OPEN', 'FAILED', 'SUCCEEDED', 'REFUND_PENDING', 'REFUNDED')),
	refund_id     text CHECK (length(refund_id) BETWEEN 1 AND 64),
	expires_at    timestamptz NOT NULL,
	created_at    timestamptz NOT NULL DEFAULT now(),
	updated_at    timestamptz NOT NULL DEFAULT now(),
	succeeded_at  timestamptz,
	refunded_at   timestamptz,
	CHECK ((state = 'REFUNDED') = (refund_id IS NOT NULL)),
	CHECK ((state = 'REFUNDED') = (refunded_at IS NOT NULL)),
	CHECK ((state IN ('SUCCEEDED', 'REFUND_PENDING', 'REFUNDED')) = (succeeded_at IS NOT NULL))
);
CREATE INDEX payments_order ON payments (order_id);
CREATE INDEX payments_refund_pending ON payments (updated_at) WHERE state = 'REFUND_PENDING';

-- Every provider event applied, by its id: a replay finds its row.
CREATE TABLE payment_events (
	event_id    text PRIMARY KEY CHECK (length(event_id) BETWEEN 1 AND 64),
	type        text NOT NULL,
	payment_id  text NOT NULL,
	verdict     text NOT NULL,
	received_at timestamptz NOT NULL DEFAULT now()
);

-- What a checkout needs of the shopper's order: its status, window and
-- price, and the payment already opened for it (NULL columns when none).
-- No row when the shopper has no such order.
CREATE FUNCTION fs_checkout_order(p_id uuid, p_user text)
RETURNS TABLE (status text, sale_id bigint, expires_ms bigint, amount_minor bigint,
    currency text, payment_id text, redirect_url text, payment_expires_ms bigint)
LANGUAGE sql STABLE AS $$
	SELECT o.status, o.sale_id, (extract(epoch FROM o.expires_at) * 1000)::bigint,
	       i.price_minor, i.currency::text, p.payment_id, p.redirect_url,
	       (extract(epoch FROM p.expires_at) * 1000)::bigint
	  FROM orders o JOIN items i ON i.id = o.item_id
	  LEFT JOIN LATERAL (SELECT * FROM payments q WHERE q.order_id = o.id
			      ORDER BY q.created_at LIMIT 1) p ON true
	 WHERE o.id = p_id AND o.user_id = p_user
$$;

-- Records the session the provider opened for an order; a concurrent
-- checkout of the same order got the same session (the order id is the
-- provider's idempotency key), so a second insert changes nothing.
CREATE FUNCTION fs_open_payment(p_payment text, p_session text, p_order uuid, p_url text,
    p_amount bigint, p_currency text, p_expires_ms bigint)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO payments (payment_id, session_id, order_id, redirect_url, amount_minor,
	    currency, state, expires_at)
	VALUES (p_payment, p_session, p_order, p_url, p_amount, p_currency, 'OPEN',
	    to_timestamp(p_expires_ms / 1000.0))
	ON CONFLICT DO NOTHING
$$;

-- Applies one provider event, once. verdict:
--   UNKNOWN_ORDER, MISMATCH  refused, nothing recorded (amount or currency
--                            differ from the order's item);
--   DUPLICATE                seen before, nothing changes;
--   PAID                     the order went PENDING -> PAID by this payment;
--   REFUND                   the money came but the order cannot take it
--                            (closed, past its window, or paid already):
--                            the caller asks the provider for a refund and
--                            records it with fs_payment_refunded (a replay
--                            of the event answers REFUND again until then);
--   FAILED                   a decline: the order stays as it is.
-- The order's row is locked first, so a payment and an expiry of the same
-- order are serialised: exactly one of them wins.
CREATE FUNCTION fs_apply_payment_event(p_event text, p_type text, p_payment text,
    p_session text, p_order uuid, p_amount bigint, p_currency text)
RETURNS TABLE (verdict text, status text, sale_id bigint, item_id bigint, user_id text,
    expires_ms bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	v_order orders%ROWTYPE;
	v_price bigint;
	v_currency text;
	v_state text;
	v_verdict text;
BEGIN
	SELECT o.* INTO v_order FROM orders o WHERE o.id = p_order FOR UPDATE;
	IF NOT FOUND THEN
		RETURN QUERY SELECT 'UNKNOWN_ORDER', NULL::text, NULL::bigint, NULL::bigint,
		    NULL::text, NULL::bigint;
		RETURN;
	END IF;
	SELECT i.price_minor, i.currency INTO v_price, v_currency FROM items i
	 WHERE i.id = v_order.item_id;
	IF v_price <> p_amount OR v_currency <> p_currency THEN
		v_verdict := 'MISMATCH';
	ELSE
		INSERT INTO payment_events (event_id, type, payment_id, verdict)
		VALUES (p_event, p_type, p_payment, 'APPLYING') ON CONFLICT DO NOTHING;
		IF NOT FOUND THEN
			SELECT p.state INTO v_state FROM payments p WHERE p.payment_id = p_payment;
			v_verdict := CASE WHEN v_state = 'REFUND_PENDING' THEN 'REFUND' ELSE 'DUPLICATE' END;
		ELSE
			SELECT p.state INTO v_state FROM payments p WHERE p.payment_id = p_payment
			   FOR UPDATE;
			IF NOT FOUND THEN
				-- A session we never recorded (our insert was lost): the
				-- signed event is the provider's word for it.
				INSERT INTO payments (payment_id, session_id, order_id, redirect_url,
				    amount_minor, currency, state, expires_at)
				VALUES (p_payment, p_session, p_order, '-', p_amount, p_currency, 'OPEN',
				    v_order.expires_at);
				v_state := 'OPEN';
			END IF;
			IF p_type = 'payment.failed' THEN
				-- A decline never undoes a success that came first.
				UPDATE payments p SET state = 'FAILED', updated_at = now()
				 WHERE p.payment_id = p_payment AND p.state = 'OPEN';
				v_verdict := 'FAILED';
			ELSIF v_state IN ('SUCCEEDED', 'REFUND_PENDING', 'REFUNDED') THEN
				v_verdict := CASE WHEN v_state = 'REFUND_PENDING' THEN 'REFUND'
				    ELSE 'DUPLICATE' END;
			ELSIF v_order.status = 'PENDING' AND now() < v_order.expires_at THEN
				UPDATE orders o SET status = 'PAID', paid_at = now() WHERE o.id = p_order;
				UPDATE payments p SET state = 'SUCCEEDED', succeeded_at = now(),
				    updated_at = now() WHERE p.payment_id = p_payment;
				v_order.status := 'PAID';
				v_verdict := 'PAID';
			ELSE
				UPDATE payments p SET state = 'REFUND_PENDING', succeeded_at = now(),
				    updated_at = now() WHERE p.payment_id = p_payment;
				v_verdict := 'REFUND';
			END IF;
			UPDATE payment_events e SET verdict = v_verdict WHERE e.event_id = p_event;
		END IF;
	END IF;
	RETURN QUERY SELECT v_verdict, v_order.status, v_order.sale_id, v_order.item_id,
	    v_order.user_id, (extract(epoch FROM v_order.expires_at) * 1000)::bigint;
END
$$;

-- The provider refunded a payment that was owed a refund.
CREATE FUNCTION fs_payment_refunded(p_payment text, p_refund text)
RETURNS void LANGUAGE sql AS $$
	UPDATE payments SET state = 'REFUNDED', refund_id = p_refund, refunded_at = now(),
	    updated_at = now()
	 WHERE payment_id = p_payment AND state = 'REFUND_PENDING'
$$;

-- The payment rules that reconcile --check verifies: every PAID order has
-- exactly one SUCCEEDED payment; every payment that succeeded for an order
-- that is closed (or paid by another payment) has been refunded exactly
-- once (REFUNDED with its refund id). One row per violation.
CREATE FUNCTION fs_payment_violations()
RETURNS TABLE (order_id uuid, problem text)
LANGUAGE sql STABLE AS $$
	SELECT o.id, format('PAID with %s succeeded payments', count(p.payment_id))
	  FROM orders o LEFT JOIN payments p ON p.order_id = o.id AND p.state = 'SUCCEEDED'
	 WHERE o.status = 'PAID' GROUP BY o.id HAVING count(p.payment_id) <> 1
	UNION ALL
	SELECT p.order_id, format('payment %s of a %s order is %s, not refunded', p.payment_id,
	    o.status, p.state)
	  FROM payments p JOIN orders o ON o.id = p.order_id
	 WHERE p.state = 'REFUND_PENDING'
	    OR (p.state = 'SUCCEEDED' AND o.status <> 'PAID')
$$;

-- The shopper's own "pay" is gone: an order is paid by the provider only.
DROP FUNCTION fs_pay_order(uuid, text);
