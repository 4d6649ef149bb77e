"""The terminal front end: streaming markdown output, theme, prompt and approval."""
