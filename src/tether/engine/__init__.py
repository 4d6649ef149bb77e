"""The turn loop and what runs it: dispatch (the one choke point), the context guard, the
sub-agents, the read-only turn, the project's instructions and the turn's record. It sits above
every layer it drives (providers, tools, store, safety, protocol) and uses their shapes from
`core/`; the hooks and `assist/` sit above it, the UI and the wiring above those."""
