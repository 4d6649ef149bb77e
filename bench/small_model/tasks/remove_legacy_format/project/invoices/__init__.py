"""Exports invoice records for the accounting tools."""
