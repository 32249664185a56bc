"""The wire: length-prefixed msgpack frames with fds alongside, and the message schemas."""
