"""Thumbnail sizes and file names for the gallery."""
