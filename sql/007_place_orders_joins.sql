-- fs_place_orders, the consumer's batch: matched by joins, not = ANY.
--
-- It was defined in 002_orders.sql, where it matched the inserted orders
-- to their messages with = ANY over arrays: a scan of the array for every
-- message, n*n comparisons for a batch of n (500 make 250,000, seen as
-- ExecEvalScalarArrayOp and uuid_eq in a profile). Databases that ran the
-- old 002 get this one in its place; new ones get only this one.

-- A whole batch in one round trip and one transaction: arrays of the same
-- length, one element per message; n in the answer is the element's
-- 1-based position. The batch's items are locked first, in id order (as
-- every function here does), so concurrent batches cannot deadlock on
-- them. The common case is one statement: every new order that finds a
-- unit is inserted at once, and each item's sold grows by the number of its
-- inserted orders with the conditional UPDATE ... WHERE sold + k <=
-- quantity. Everything else (redeliveries, a shopper's second live order,
-- no unit left, an item not in the sale) goes through fs_place_order one by
-- one, in item then message order.
CREATE OR REPLACE FUNCTION fs_place_orders(p_ids uuid[], p_sales bigint[], p_items bigint[], p_users text[],
    p_reserved_ms bigint[])
RETURNS TABLE (n bigint, status text, failure text, expires_ms bigint, duplicate boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	v_ids uuid[];
	v_items bigint[];
	v_expires bigint[];
	v_ords bigint[];
	v_exps bigint[];
	v_want integer;
	v_done integer;
	m record;
	r record;
BEGIN
	PERFORM 1 FROM items i WHERE i.id = ANY (p_items) ORDER BY i.id FOR UPDATE;
	-- With the items locked, quantity - sold cannot change under us; a
	-- message that appears twice in the batch is inserted once (idrk).
	WITH b AS (
		SELECT u.id, u.sale, u.item, u.usr, u.ms, u.ord
		  FROM unnest(p_ids, p_sales, p_items, p_users, p_reserved_ms)
		       WITH ORDINALITY AS u(id, sale, item, usr, ms, ord)
	), fresh AS (
		SELECT b.*, s.payment_window_s AS win, i.quantity - i.sold AS avail,
		       row_number() OVER (PARTITION BY b.item ORDER BY b.ord) AS rk,
		       row_number() OVER (PARTITION BY b.id ORDER BY b.ord) AS idrk
		  FROM b JOIN items i ON i.id = b.item AND i.sale_id = b.sale
		  JOIN sales s ON s.id = i.sale_id
		 WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = b.id)
	), ins AS (
		INSERT INTO orders (id, sale_id, item_id, user_id, status, reserved_at, expires_at)
		SELECT f.id, f.sale, f.item, f.usr, 'PENDING', to_timestamp(f.ms / 1000.0),
		       to_timestamp(f.ms / 1000.0) + make_interval(secs => f.win)
		  FROM fresh f WHERE f.rk <= f.avail AND f.idrk = 1
		ON CONFLICT DO NOTHING
		RETURNING orders.id, orders.item_id,
		    (extract(epoch FROM orders.expires_at) * 1000)::bigint AS exp
	)
	SELECT coalesce(array_agg(ins.id), '{}'), coalesce(array_agg(ins.item_id), '{}'),
	       coalesce(array_agg(ins.exp), '{}')
	  INTO v_ids, v_items, v_expires FROM ins;
	SELECT count(DISTINCT u.item) INTO v_want FROM unnest(v_items) AS u(item);
	UPDATE items i SET sold = i.sold + c.k
	  FROM (SELECT u.item, count(*) AS k FROM unnest(v_items) AS u(item) GROUP BY u.item) c
	 WHERE i.id = c.item AND i.sold + c.k <= i.quantity;
	GET DIAGNOSTICS v_done = ROW_COUNT;
	IF v_done <> v_want THEN
		-- Cannot happen under the lock; if it did, the whole batch is
		-- undone and the caller records its orders one by one.
		RAISE EXCEPTION 'fs_place_orders: more orders than units' USING ERRCODE = 'check_violation';
	END IF;
	-- Each inserted order answers for the first message that carried it
	-- (a message twice in the batch is a redelivery: fs_place_order below).
	SELECT coalesce(array_agg(q.o), '{}'), coalesce(array_agg(q.exp), '{}')
	  INTO v_ords, v_exps FROM (
		SELECT min(b.ord) AS o, x.exp
		  FROM unnest(v_ids, v_expires) AS x(id, exp)
		  JOIN unnest(p_ids) WITH ORDINALITY AS b(id, ord) ON b.id = x.id
		 GROUP BY x.id, x.exp) q;
	RETURN QUERY
	SELECT d.o, 'PENDING'::text, NULL::text, d.exp, false FROM unnest(v_ords, v_exps) AS d(o, exp);
	FOR m IN
		SELECT b.id, b.sale, b.item, b.usr, b.ms, b.ord
		  FROM unnest(p_ids, p_sales, p_items, p_users, p_reserved_ms)
		       WITH ORDINALITY AS b(id, sale, item, usr, ms, ord)
		  LEFT JOIN unnest(v_ords) AS d(o) ON d.o = b.ord
		 WHERE d.o IS NULL
		 ORDER BY b.item, b.ord
	LOOP
		SELECT * INTO r FROM fs_place_order(m.id, m.sale, m.item, m.usr, m.ms);
		n := m.ord;
		status := r.status;
		failure := r.failure;
		expires_ms := r.expires_ms;
		duplicate := r.duplicate;
		RETURN NEXT;
	END LOOP;
END
$$;
