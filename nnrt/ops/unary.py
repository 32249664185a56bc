"""unary operations (not yet written)."""
