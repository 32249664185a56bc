"""resize operations (not yet written)."""
