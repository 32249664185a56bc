"""pooling operations (not yet written)."""
