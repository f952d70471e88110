-- The order pipeline's rules inside the database: record an order exactly
-- once, pay, cancel, expire, and close a ghost hold. Every function keeps
-- items.sold equal to the item's live (PENDING + PAID) orders in the same
-- transaction that changes them, so invariant 1 holds at every commit.

-- Records one order from the topic. A redelivered message finds its row and
-- reports it (duplicate = true) without changing anything. A new order takes
-- a unit with the conditional UPDATE; a second live order of the shopper in
-- the sale collides with orders_one_live_per_user, gives the unit back and
-- is recorded as FAILED LIVE_ORDER; no unit left is FAILED NO_STOCK. An item
-- that is not in the sale cannot be recorded at all: status NULL,
-- failure UNKNOWN_ITEM (the caller sends the message to the dead letters).
CREATE FUNCTION fs_place_order(p_id uuid, p_sale bigint, p_item bigint, p_user text,
    p_reserved_ms bigint, OUT status text, OUT failure text, OUT expires_ms bigint,
    OUT duplicate boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	v_window integer;
	v_reserved timestamptz := to_timestamp(p_reserved_ms / 1000.0);
	v_expires timestamptz;
BEGIN
	duplicate := true;
	SELECT o.status, o.failure, (extract(epoch FROM o.expires_at) * 1000)::bigint
	  INTO status, failure, expires_ms FROM orders o WHERE o.id = p_id;
	IF FOUND THEN
		RETURN;
	END IF;
	duplicate := false;
	SELECT s.payment_window_s INTO v_window
	  FROM items i JOIN sales s ON s.id = i.sale_id
	 WHERE i.id = p_item AND i.sale_id = p_sale;
	IF NOT FOUND THEN
		failure := 'UNKNOWN_ITEM';
		RETURN;
	END IF;
	v_expires := v_reserved + make_interval(secs => v_window);
	expires_ms := (extract(epoch FROM v_expires) * 1000)::bigint;

	UPDATE items SET sold = sold + 1 WHERE id = p_item AND sold < quantity;
	IF NOT FOUND THEN
		failure := 'NO_STOCK';
	ELSE
		INSERT INTO orders (id, sale_id, item_id, user_id, status, reserved_at, expires_at)
		VALUES (p_id, p_sale, p_item, p_user, 'PENDING', v_reserved, v_expires)
		ON CONFLICT DO NOTHING;
		IF FOUND THEN
			status := 'PENDING';
			RETURN;
		END IF;
		UPDATE items SET sold = sold - 1 WHERE id = p_item;
		-- The conflict was this very id (another consumer won the race) or
		-- the shopper's live order.
		SELECT o.status, o.failure, (extract(epoch FROM o.expires_at) * 1000)::bigint
		  INTO status, failure, expires_ms FROM orders o WHERE o.id = p_id;
		IF FOUND THEN
			duplicate := true;
			RETURN;
		END IF;
		failure := 'LIVE_ORDER';
	END IF;

	INSERT INTO orders (id, sale_id, item_id, user_id, status, failure, reserved_at, expires_at,
	    closed_at)
	VALUES (p_id, p_sale, p_item, p_user, 'FAILED', failure, v_reserved, v_expires, now())
	ON CONFLICT (id) DO NOTHING;
	IF FOUND THEN
		status := 'FAILED';
		RETURN;
	END IF;
	SELECT o.status, o.failure, (extract(epoch FROM o.expires_at) * 1000)::bigint
	  INTO status, failure, expires_ms FROM orders o WHERE o.id = p_id;
	duplicate := true;
END
$$;

-- fs_place_orders, the consumer's batch: sql/007_place_orders_joins.sql.

-- PENDING becomes PAID only inside the payment window, by its shopper.
-- Returns the order as it stands (changed says whether this call paid it),
-- or no row when the shopper has no such order.
CREATE FUNCTION fs_pay_order(p_id uuid, p_user text)
RETURNS TABLE (status text, sale_id bigint, item_id bigint, expires_ms bigint, changed boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
	RETURN QUERY
	UPDATE orders o SET status = 'PAID', paid_at = now()
	 WHERE o.id = p_id AND o.user_id = p_user AND o.status = 'PENDING' AND now() < o.expires_at
	RETURNING o.status, o.sale_id, o.item_id, (extract(epoch FROM o.expires_at) * 1000)::bigint,
	    true;
	IF NOT FOUND THEN
		RETURN QUERY
		SELECT o.status, o.sale_id, o.item_id,
		    (extract(epoch FROM o.expires_at) * 1000)::bigint, false
		  FROM orders o WHERE o.id = p_id AND o.user_id = p_user;
	END IF;
END
$$;

-- The shopper gives a PENDING order's unit back: CANCELLED and sold - 1 in
-- one statement. Same answer shape as fs_pay_order.
CREATE FUNCTION fs_cancel_order(p_id uuid, p_user text)
RETURNS TABLE (status text, sale_id bigint, item_id bigint, expires_ms bigint, changed boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
	RETURN QUERY
	WITH c AS (
		UPDATE orders o SET status = 'CANCELLED', closed_at = now()
		 WHERE o.id = p_id AND o.user_id = p_user AND o.status = 'PENDING'
		RETURNING o.status, o.sale_id, o.item_id, o.expires_at
	), d AS (
		UPDATE items i SET sold = i.sold - 1 FROM c WHERE i.id = c.item_id
	)
	SELECT c.status, c.sale_id, c.item_id, (extract(epoch FROM c.expires_at) * 1000)::bigint, true
	  FROM c;
	IF NOT FOUND THEN
		RETURN QUERY
		SELECT o.status, o.sale_id, o.item_id,
		    (extract(epoch FROM o.expires_at) * 1000)::bigint, false
		  FROM orders o WHERE o.id = p_id AND o.user_id = p_user;
	END IF;
END
$$;

-- Moves up to p_limit overdue PENDING orders to EXPIRED and gives their
-- units back, in one transaction. SKIP LOCKED lets several runs share the
-- work: each order is expired by exactly one of them, and an order that a
-- payment holds is left to the payment. Items are locked in id order, as
-- fs_place_orders does.
CREATE FUNCTION fs_expire_orders(p_limit integer)
RETURNS TABLE (id uuid, sale_id bigint, item_id bigint, user_id text, expires_ms bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	v_ids uuid[];
	v_sales bigint[];
	v_items bigint[];
	v_users text[];
	v_expires bigint[];
BEGIN
	WITH e AS (
		UPDATE orders o SET status = 'EXPIRED', closed_at = now()
		 WHERE o.id IN (SELECT p.id FROM orders p
				 WHERE p.status = 'PENDING' AND p.expires_at <= now()
				 ORDER BY p.expires_at LIMIT p_limit
				 FOR UPDATE SKIP LOCKED)
		   AND o.status = 'PENDING'
		RETURNING o.id, o.sale_id, o.item_id, o.user_id,
		    (extract(epoch FROM o.expires_at) * 1000)::bigint AS exp
	)
	SELECT array_agg(e.id), array_agg(e.sale_id), array_agg(e.item_id), array_agg(e.user_id),
	       array_agg(e.exp)
	  INTO v_ids, v_sales, v_items, v_users, v_expires FROM e;
	IF v_ids IS NULL THEN
		RETURN;
	END IF;
	PERFORM 1 FROM items i WHERE i.id = ANY (v_items) ORDER BY i.id FOR UPDATE;
	UPDATE items i SET sold = i.sold - c.k
	  FROM (SELECT u.item, count(*) AS k FROM unnest(v_items) AS u(item) GROUP BY u.item) c
	 WHERE i.id = c.item;
	RETURN QUERY SELECT * FROM unnest(v_ids, v_sales, v_items, v_users, v_expires);
END
$$;

-- Closes a hold whose order never reached the database: records the order
-- as FAILED GHOST_HOLD unless a row exists already (the consumer may win
-- the race; then its row stands). Returns the order's status afterwards
-- and its end of window: FAILED, EXPIRED or CANCELLED mean the hold may
-- be released, PENDING or PAID that it must stay; status NULL when no
-- order can ever be recorded for that item (the hold may go too).
CREATE FUNCTION fs_close_ghost(p_id uuid, p_sale bigint, p_item bigint, p_user text,
    p_reserved_ms bigint, OUT status text, OUT expires_ms bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	v_window integer;
	v_reserved timestamptz := to_timestamp(p_reserved_ms / 1000.0);
BEGIN
	SELECT s.payment_window_s INTO v_window
	  FROM items i JOIN sales s ON s.id = i.sale_id
	 WHERE i.id = p_item AND i.sale_id = p_sale;
	IF FOUND THEN
		INSERT INTO orders (id, sale_id, item_id, user_id, status, failure, reserved_at,
		    expires_at, closed_at)
		VALUES (p_id, p_sale, p_item, p_user, 'FAILED', 'GHOST_HOLD', v_reserved,
		    v_reserved + make_interval(secs => v_window), now())
		ON CONFLICT (id) DO NOTHING;
	END IF;
	SELECT o.status, (extract(epoch FROM o.expires_at) * 1000)::bigint INTO status, expires_ms
	  FROM orders o WHERE o.id = p_id;
END
$$;
