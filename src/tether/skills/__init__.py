"""Skills in the Agent Skills format: SKILL.md packs found in the project and the user's home,
listed in the system prompt by name and description, loaded with use_skill, their scripts
offered as tools that run like run_cmd."""
