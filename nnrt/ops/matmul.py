"""matmul operations (not yet written)."""
