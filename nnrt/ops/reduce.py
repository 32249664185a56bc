"""reduce operations (not yet written)."""
