"""Finds files with the same content in a folder tree."""
