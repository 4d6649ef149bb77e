"""Counts words, lines and characters in text files."""
