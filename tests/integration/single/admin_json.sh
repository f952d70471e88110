# shellcheck shell=sh
# flashsale-admin sale create --json: the whole sale as one JSON document,
# for scripts and tests that must not read a line by its number. Read as
# JSON by PostgreSQL (jsonb) and compared with the rows it describes.

aj_file=$FLASHSALE_STATE/aj-$$.json
cat >"$aj_file" <<'JSON'
{"name":"json sale","startsInSeconds":120,"durationSeconds":600,"paymentWindowSeconds":300,
 "items":[{"name":"Phone","priceMinor":1990000,"currency":"VND","quantity":7},
          {"name":"Case \"pro\"","priceMinor":50000,"currency":"VND","quantity":3,"shards":2}]}
JSON

# aj_sql DOC SQL: runs SQL with the document as :'doc' (no quoting by hand).
aj_sql() {
	printf '%s\n' "$2" | psql -X -q -A -t -v ON_ERROR_STOP=1 -v doc="$1" "$FLASHSALE_PG" -f -
}

aj_sales=$(psql_q "SELECT count(*) FROM sales")
aj_out=$(admin sale create "$aj_file" --json 2>&1)
is "$?" 0 "sale create --json succeeds"
is "$(printf '%s\n' "$aj_out" | wc -l)" 1 "sale create --json prints one line"
is "$(aj_sql "$aj_out" "SELECT jsonb_typeof(:'doc'::jsonb)")" object "the line is a JSON object"
is "$(aj_sql "$aj_out" "SELECT (d->>'paymentWindowSeconds') || ' ' || jsonb_array_length(d->'items') || ' ' ||
	(d->'items'->1->>'name') || ' ' || (d->'items'->0->>'quantity') || ' ' || (d->'items'->1->>'priceMinor') || ' ' ||
	((d->>'endsAt')::timestamptz - (d->>'startsAt')::timestamptz)
	FROM (SELECT :'doc'::jsonb AS d) x")" '300 2 Case "pro" 7 50000 00:10:00' \
    "the document says what the file said"
is "$(aj_sql "$aj_out" "SELECT d = jsonb_build_object('saleId', s.id, 'name', s.name,
		'startsAt', d->'startsAt', 'endsAt', d->'endsAt', 'paymentWindowSeconds', s.payment_window_s,
		'itemIds', (SELECT jsonb_agg(i.id ORDER BY i.id) FROM items i WHERE i.sale_id = s.id),
		'items', (SELECT jsonb_agg(jsonb_build_object('itemId', i.id, 'name', i.name,
			'priceMinor', i.price_minor, 'currency', i.currency, 'quantity', i.quantity) ORDER BY i.id)
			FROM items i WHERE i.sale_id = s.id))
	AND abs(extract(epoch FROM (d->>'startsAt')::timestamptz - s.starts_at)) < 0.001
	AND abs(extract(epoch FROM (d->>'endsAt')::timestamptz - s.ends_at)) < 0.001
	FROM (SELECT :'doc'::jsonb AS d) x JOIN sales s ON s.id = (d->>'saleId')::bigint")" t \
    "the document is exactly the sale and items PostgreSQL holds"

# Without --json the answer stays {"saleId","itemIds"}.
aj_plain=$(admin sale create "$aj_file")
is "$(aj_sql "$aj_plain" "SELECT d = jsonb_build_object('saleId', (d->>'saleId')::bigint,
		'itemIds', (SELECT jsonb_agg(i.id ORDER BY i.id) FROM items i WHERE i.sale_id = (d->>'saleId')::bigint))
	FROM (SELECT :'doc'::jsonb AS d) x")" t "sale create without --json: {saleId, itemIds}, as before"

# A wrong option is refused before anything is written.
refuse "sale create refuses an unknown option" admin sale create "$aj_file" --yaml
is "$(psql_q "SELECT count(*) FROM sales")" "$((aj_sales + 2))" "only the two good runs created a sale"
