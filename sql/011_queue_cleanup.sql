-- A sale's waiting room rows go with the sale: whatever deletes a sale
-- (the test suites' cleanup; nothing in the shop deletes a sale that has
-- orders) takes its places and its pacer's admission steps with it, rather
-- than being refused by their foreign keys.
ALTER TABLE queue_places
	DROP CONSTRAINT queue_places_sale_id_fkey,
	ADD CONSTRAINT queue_places_sale_id_fkey FOREIGN KEY (sale_id) REFERENCES sales (id)
		ON DELETE CASCADE;
ALTER TABLE queue_admissions
	DROP CONSTRAINT queue_admissions_sale_id_fkey,
	ADD CONSTRAINT queue_admissions_sale_id_fkey FOREIGN KEY (sale_id) REFERENCES sales (id)
		ON DELETE CASCADE;
