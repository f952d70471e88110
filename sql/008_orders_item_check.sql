-- An order's item is checked once per statement, not once per row.
--
-- The foreign key orders (item_id, sale_id) -> items (id, sale_id) ran its
-- trigger for every order row: a query through SPI and a share lock on the
-- item's row, for each of the orders a consumer batch writes, although all
-- of a batch's orders name a handful of items that fs_place_orders has
-- already locked and joined. tests/bench/consumer --rounds 3 50000,
-- alternated twice on 2026-12-01: PostgreSQL 25.4 and 25.0 us per order with
-- the key, 20.4 and 20.0 without it. The same rule still holds, with the
-- same locks, checked per statement instead:
--  * a statement that inserts orders locks each distinct (item, sale) they
--    name FOR KEY SHARE, in id order, and fails with 23503 if one is not an
--    item of that sale (all of the statement's rows are undone with it);
--  * an UPDATE that sets an order's item_id or sale_id checks the new pair
--    the same way, row by row (nothing of ours ever sets them);
--  * an item that has orders can be neither deleted nor given another id or
--    sale (23503, as the key's NO ACTION), and items cannot be truncated
--    while any order exists.
-- The delete side runs once its row is locked (BEFORE ROW triggers run
-- after the lock), so a delete that waited for an inserting transaction
-- sees that transaction's orders, at READ COMMITTED, the isolation every
-- client of this database uses.
ALTER TABLE orders DROP CONSTRAINT IF EXISTS orders_item_id_sale_id_fkey;

CREATE FUNCTION fs_orders_items_exist() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	v_want bigint;
	v_got bigint;
BEGIN
	SELECT count(*) INTO v_want FROM (SELECT DISTINCT item_id, sale_id FROM fs_new_orders) n;
	IF v_want = 0 THEN
		RETURN NULL;
	END IF;
	PERFORM 1 FROM items i
	 WHERE (i.id, i.sale_id) IN (SELECT n.item_id, n.sale_id FROM fs_new_orders n)
	 ORDER BY i.id FOR KEY SHARE OF i;
	GET DIAGNOSTICS v_got = ROW_COUNT;
	IF v_got <> v_want THEN
		RAISE EXCEPTION 'an order names an item that is not in its sale'
		    USING ERRCODE = 'foreign_key_violation';
	END IF;
	RETURN NULL;
END $$;

CREATE TRIGGER orders_items_exist AFTER INSERT ON orders
	REFERENCING NEW TABLE AS fs_new_orders
	FOR EACH STATEMENT EXECUTE FUNCTION fs_orders_items_exist();

CREATE FUNCTION fs_order_item_exists() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF (NEW.item_id, NEW.sale_id) IS DISTINCT FROM (OLD.item_id, OLD.sale_id) THEN
		PERFORM 1 FROM items i WHERE i.id = NEW.item_id AND i.sale_id = NEW.sale_id
		    FOR KEY SHARE;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'order %: item % is not in sale %', NEW.id, NEW.item_id, NEW.sale_id
			    USING ERRCODE = 'foreign_key_violation';
		END IF;
	END IF;
	RETURN NEW;
END $$;

CREATE TRIGGER order_item_exists BEFORE UPDATE OF item_id, sale_id ON orders
	FOR EACH ROW EXECUTE FUNCTION fs_order_item_exists();

CREATE FUNCTION fs_item_unordered() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'UPDATE' AND (NEW.id, NEW.sale_id) IS NOT DISTINCT FROM (OLD.id, OLD.sale_id) THEN
		RETURN NEW;
	END IF;
	IF EXISTS (SELECT 1 FROM orders o WHERE o.item_id = OLD.id AND o.sale_id = OLD.sale_id) THEN
		RAISE EXCEPTION 'item % of sale % has orders', OLD.id, OLD.sale_id
		    USING ERRCODE = 'foreign_key_violation';
	END IF;
	IF TG_OP = 'DELETE' THEN
		RETURN OLD;
	END IF;
	RETURN NEW;
END $$;

CREATE TRIGGER item_unordered BEFORE DELETE OR UPDATE OF id, sale_id ON items
	FOR EACH ROW EXECUTE FUNCTION fs_item_unordered();

CREATE FUNCTION fs_items_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM orders) THEN
		RAISE EXCEPTION 'items cannot be truncated while orders exist'
		    USING ERRCODE = 'foreign_key_violation';
	END IF;
	RETURN NULL;
END $$;

CREATE TRIGGER items_truncate BEFORE TRUNCATE ON items
	FOR EACH STATEMENT EXECUTE FUNCTION fs_items_truncate();
