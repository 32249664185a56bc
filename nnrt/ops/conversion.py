"""conversion operations (not yet written)."""
