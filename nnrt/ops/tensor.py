"""tensor operations (not yet written)."""
