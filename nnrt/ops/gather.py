"""gather operations (not yet written)."""
