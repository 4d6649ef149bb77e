"""The interactive app's slash commands: the table and the handlers."""
