"""transpose_conv operations (not yet written)."""
