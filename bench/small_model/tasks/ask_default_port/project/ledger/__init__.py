"""A tiny bookkeeping service."""
