"""pad operations (not yet written)."""
