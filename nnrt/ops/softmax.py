"""softmax operations (not yet written)."""
