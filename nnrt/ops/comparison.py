"""comparison operations (not yet written)."""
