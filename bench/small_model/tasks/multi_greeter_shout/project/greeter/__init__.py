"""Print greetings."""
