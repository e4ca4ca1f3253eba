"""Delta table layout of an image: one Arrow schema per sub-image table, image/delta → rows (secrets
redacted), and record-level row history. Knows `kraftlake.replay`, never Spark."""
