"""Hooks: commands the user configures to run at fixed points of a session, in the format
Claude Code's settings use (a `hooks` table of events, matchers and commands).

Hooks, in detail:

`hooks/config.load_hooks` reads the `hooks` tables (the `hooks` setting from config.toml,
TETHER_HOME/settings.json, then `.tether/settings.json` only when `RunOptions.trusted`) into a
`HookSet` of `HookSpec`s (event, matcher compiled as a full-match regex, command, timeout,
strict, source file) in the order they run; `entry_problem` names what is wrong with a bad
entry, which is skipped with a warning. `runtime.attach_hooks` builds a `hooks.engine.Hooks`
on a `runner.HookRunner` (the run's `Sandbox` as its `Launcher`, as `run_cmd` and a skill's
`--help` use it) and, when any hook is configured, installs it on both seams:

- `dispatch.ToolHooks` (`screen`, `after_result`) on the `Dispatcher`: `_screen` runs right
  after validation and before the gate, so the policy and the approval question see the
  arguments that will run; a `Screening` with new arguments is validated against the tool's
  model again (a bad rewrite is a refusal), and the result notes what ran. `after_result`'s
  text (PostToolUse context) is appended after the window. Calls that never ran (`_Outcome.ran` false:
  unknown, invalid, screened out or refused) get no PostToolUse. Sub-agents copy the dispatcher, hooks included.
- `turn_end.TurnHooks` (`prompt_submitted`, `stopping`) on the `TurnLoop`.

SessionStart runs from `runtime.session_started` (the app after its start questions and on
`/clear`, `cli.run_one_shot` after `Runtime.start`); its context waits in
`Hooks.pending_context` for the next request. PreCompact is the `Compressor`'s
`before_condense` callback (`manual` from `compact`, `auto` from `fit`).

`HookRunner.run` starts `bash -c COMMAND` through its `Launcher` (required: no hook starts
outside the sandbox's `launch`, which in mode off runs the command as it is) in its own session with the event as JSON on stdin,
the `hook_environment` (an allowlist plus `runner.project_variables`, which are added after the
sandbox's own allowlist too) and the `processes.CommandProcesses` marker, so a hook that times
out is stopped with everything it started (`stop_processes`), and a finished hook's background
processes too. `replies.read_reply` turns a `HookRun` into a `HookReply` by Claude Code's rules
(exit 2 blocks with stderr; exit 0 with JSON: `decision`, `continue`, `hookSpecificOutput`;
126/127 or a failed start (an OS error, a NUL byte in the command) is "could not start",
level `error`; other failures `warning`; a
strict hook's failure blocks). `Hooks._run` runs an event's hooks in order: the first block
wins, rewrites chain. A hook never approves: `permissionDecision: "allow"` is ignored.
`.tether/settings.json` is in `project_config.PROJECT_CONFIG` (and the scripts its hook
commands name are kept read-only by `config_programs`), and `approval.writes_own_settings`
makes a file tool's write to it ask.
"""
