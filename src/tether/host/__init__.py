"""How tether touches the machine it runs on: paths resolved as the kernel resolves them,
regular files only, bounded reads, crash-safe writes, state files that fail safe, text safe to
write out, the programs tether runs itself (git hardened against the repository's own config)
and the project's file list. The bottom layer: it imports nothing else of tether, so every
layer above may use it."""
