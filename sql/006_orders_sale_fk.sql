-- An order's sale is already vouched for twice over: its (item_id,
-- sale_id) must be an item of that sale, and every item's sale exists.
-- The direct key to sales only added a check and a shared lock on the
-- sale's row for every order row the consumer writes (all of one sale's
-- orders meet on that one row).
ALTER TABLE orders DROP CONSTRAINT IF EXISTS orders_sale_id_fkey;
