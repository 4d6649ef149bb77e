"""Posts drafts to the Quill publishing API."""
