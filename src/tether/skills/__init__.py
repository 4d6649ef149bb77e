"""Skills in the Agent Skills format: SKILL.md packs found in the project and the user's home,
listed in the system prompt by name and description, loaded with use_skill, their scripts
offered as tools that run like run_cmd.

Project instructions and skills, in detail:

`runtime.attach_context_files` reads both once per runtime. `instructions.load_instructions`
takes TETHER_HOME/AGENTS.md, then one file per folder from the git root down to the working
directory (`AGENTS.override.md`, else `AGENTS.md`, else the first `instruction_fallbacks` name),
project files only when `RunOptions.trusted`, and a folder above the working directory only
when `trusted_above` (the runtime passes `TrustStore.is_trusted`, which keys trust by real path
and identity and stops at a nested repository) says so; a file skipped for trust goes to
`ProjectInstructions.skipped`, which `/context` lists. It is cut at `instructions_max_bytes`
with a note. The
text goes into `Runtime.system_prompt` as `prompts.system_prompt`'s `steady` part (with the
skill index), so it reaches every request (a sub-agent's too) and stays out of the history the
`Compressor` condenses. `prompts.system_prompt` orders the prompt for the server's prompt
cache: first what is the same in every project and on every day (the stance, the tool menu,
the worked example), then what varies (`PLACE`: root, OS and date, full profile only; the
`steady` part; the project map), so two projects share the stable prefix
(`tests/test_prompt_prefix.py`); a tool that joins mid-session (a skill's scripts) is added at
the end of the menu's list, after every tool offered before it.

`catalog.discover_skills` searches TETHER_HOME/skills and ~/.agents/skills, then `skills`,
`.tether/skills`, `.agents/skills`, `.claude/skills` (trusted projects only); the first skill
of a name wins, and a project skill with a personal one's name is left out with a note (its
script tools would take the names, so the rules and hooks, of yours); a bad frontmatter is a
warning (`file:line: why; skill skipped`).
Nothing is looked up next to the installed package. The four project folders are entries of
`project_config.PROJECT_CONFIG` (`SKILL_FOLDERS`), so a sandboxed command cannot plant a skill; the root's
instruction file names (`project_config.instruction_names` of the `instruction_fallbacks`, handed
to `Sandbox.instructions`) are held by `sandbox_paths.instruction_entries`. Folders above the
root are outside the writable bind already; an AGENTS.md in a subfolder is not held (only a run
started there reads it). `catalog.prompt_index` lists names and
descriptions in name order, shortening every description evenly to the budget, never dropping
a skill. With any skill found, `use_skill` joins the table (and `profile.CORE_TOOLS`).
`SkillBook.load` returns the body, the bundled files and `allowed-tools` as advice, and hands
the script tools to `runtime.add_skill_tools` (in the table, marked loaded on the menu; a name
another tool holds stays that tool's). A resumed or `/load`ed conversation gets the script
tools of the skills its history loaded again (`Runtime.resume_skills`, called by `Sessions`).
A script tool (`scripts.ScriptTool`) has `runs_commands` and returns the shell-quoted command
line as its `main_value`, so `ApprovalPolicy` and run rules see the command exactly as for
run_cmd, and its handler calls run_cmd's own handler: same sessions, sandbox and output.
Reading a Python script's `--help` runs it in a child when the skill is loaded, and only when
`SkillBook.confined()` (the run's `Sandbox.confinement` is not "off"): launched by that sandbox
(as a command is), 10 s at most, a minimal environment. Otherwise `scripts.script_tool` gets no
help launcher and makes the Python script an argument-list tool (`ArgList`, described with
`UNREAD_HELP`): no project code runs at load without confinement, and `--help` becomes a call
like any other, through approval. Project skills exist only in trusted folders. `/skill` loads
in a worker thread, since `--help` may run. A sub-agent's table gets its own `use_skill`
(`SubagentRunner.prepare_table` calls `SkillBook.give_agent`: a copy of the book whose `on_load`
is `book.add_to_table` on the agent's table, with its own `loaded`), and its prompt the same
`prompt_index` (`SkillBook.index_for`), so what an agent loads stays the agent's.
"""
