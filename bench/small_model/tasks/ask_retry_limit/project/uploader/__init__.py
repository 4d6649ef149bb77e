"""Upload report files to the archive."""
