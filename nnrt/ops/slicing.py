"""slicing operations (not yet written)."""
