"""space operations (not yet written)."""
