"""The user interfaces the loop talks to: the headless writer and the terminal."""
