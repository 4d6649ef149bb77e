"""What tether keeps on disk: settings, sessions, memory, keys, undo, crash-safe writes."""
