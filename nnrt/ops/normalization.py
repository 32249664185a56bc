"""normalization operations (not yet written)."""
