"""activation operations (not yet written)."""
