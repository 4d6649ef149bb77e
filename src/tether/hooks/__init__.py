"""Hooks: commands the user configures to run at fixed points of a session, in the format
Claude Code's settings use (a `hooks` table of events, matchers and commands)."""
