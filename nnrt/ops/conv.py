"""conv operations (not yet written)."""
