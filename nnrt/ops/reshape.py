"""reshape operations (not yet written)."""
