"""What keeps a hostile model or repository in bounds: approval, rules, paths, the sandbox.

Safety layers, in detail:

1. `approval.ApprovalPolicy.check` runs for every call: deny rules (from the user file, the
   project file, `--allow`/`--deny` and `/perms`) are checked against the main argument and
   every path argument; deny wins, always. `approval.checked_values` says what the call does
   with each value (`Tool.path_accesses`: "read" for a path argument the tool only reads,
   "write" for one in `written_params`, "run" for a command), and `RuleSet.decide` scopes the
   rules to it (`Rule.applies`): rules naming the tool, capability rules of that kind
   (`read(P)`, `write(P)`, `run(P)`), and deny rules with a pattern that name any tool of that
   kind (`ToolTable.access()` tells which). A new tool is covered by declaring its paths.
   Every gate speaks one type, `verdict.GateVerdict` (`RuleSet.decide` returns its subclass
   `RuleVerdict`, which adds the deciding rule, and a denied value's verdict is the call's);
   only the user's answer is another, `ui_protocol.Decision`. Under `--auto` everything else runs, except a command that deny
   rules cannot see through (`shell_parse.split_command` says opaque, or input on stdin).
   `split_command` models bash exactly (its comments, quoting and word splitting, in
   `lex_words`) or says opaque; `tests/test_shell_differential.py` checks that against a real
   bash whose every command is a recording function (the same lines on every run, no shrinking;
   `TETHER_DIFFERENTIAL_RANDOM=1` and `TETHER_DIFFERENTIAL_EXAMPLES=N` hunt longer). A command deny rule also matches from any
   later word of a part on (`shell_parse.later_command_forms`, bounded at
   `MAX_LATER_COMMANDS` candidate words, past which the rule simply matches); allow rules
   match parts only.
   Otherwise: a path outside the root asks; an allow rule that covers every checked value
   runs; read-only tools run; the rest asks. Above rules and `--auto`, `guarded_files_verdict`
   makes a file tool's write into git's own files (`git_guard.writes_git_files`: a `.git`
   component, a directory shaped like a git dir, or the git dir a `.git` file points to, on
   the normalized and the resolved path) or into tether's own settings
   (`approval.writes_own_settings`: anything in TETHER_HOME, `SecretFiles.holds`, and any
   `.permissions.json`) ask; with `can_ask` False (one-shot) it is refused
   unless an allow rule without wildcards names exactly that path.
   Every path is resolved by `paths.resolve_path`, as the kernel resolves it (symlinks followed
   where they are met, before the `..` after them; a missing component taken as a directory to
   be made), with and without following a last symlink (`paths.resolved_forms`). Containment
   (`approval.is_inside`), the keys guard (`secret_files.SecretFiles`) and path rules (normalized form
   and resolved forms: deny if any matches, allow only if all are covered) all use it, and
   `ToolContext.resolve` hands the tools the same resolution, refusing the saved keys by name
   or by device and inode; a tool walking a folder (`search_in_file`, `repo_map`) asks
   `file_search.WalkGuard` about each file it finds: it skips one behind a symlink leading
   out of the scope, one with the keys' identity, and one that `ApprovalPolicy.may_read`
   (handed to the tools as `ToolContext.may_read`) says a deny rule covers.
2. `permissions.load_rules` ignores a project's allow rules until `TrustStore` says the folder
   is trusted; its deny rules always apply. `trusted.json` is a list of `TrustedFolder`
   entries, `{"path", "device", "inode"}` (plain path strings from older files are read as
   path-only entries and never resolved again, so a symlink put in a trusted folder's place
   carries nothing). An entry covers a folder below it unless a directory in between (the
   folder itself included) has a `.git`. `trust.AlwaysAnswer` saves to the project file only
   when that cannot trust too much: `too_broad_to_trust` ($HOME, `/`, a non-repository that
   holds repositories within three levels) sends the rule to `TETHER_HOME/permissions.json`
   instead, and the answer names the file (or "this session only" when saving fails).
3. `plan.PlanGate` wraps the policy: while plan mode is on and no plan is approved, only
   read-only tools and `submit_plan_for_approval` run. `deepthink.ReadOnlyStage` wraps it for
   the first two stages of a deepthink chain. Both deny with `GateVerdict.by` set ("plan
   mode", "/deepthink"), so the dispatcher's refusal names the gate and its reason instead of
   a permission rule and "do not retry".
4. `sandbox.Sandbox` confines every command `run_cmd` starts: `ShellSessions` asks its
   `Launcher` (the sandbox) for a `Launch` (argv, environment, descriptors to pass, and a
   `release` called once the command has exited). In `auto` (the default) it is
   workspace-write where `sandbox_probe.remembered_problem` says bwrap works, else off;
   `Runtime.start` probes in a worker thread so the one notice comes at start. bwrap starts
   with `sandbox_environment` (an allowlist, so /proc/1/environ holds no key), the seccomp
   program from `seccomp.unix_socket_filter` on a pipe (`--seccomp FD`), and in
   workspace-write read-only binds over `sandbox_paths.protected_paths`: the git directory
   (or `.git` file, gitdir and commondir), every entry of `project_config.PROJECT_CONFIG`
   (rules, hooks, `.mcp.json`, skill and agent folders), the root's instruction files
   (`instruction_entries`) and the project files that the entries of `.mcp.json` and the
   hooks file name (`config_programs.named_programs`: `python3 srv.py` keeps srv.py). Every
   folder between the root and a protected path is bound onto itself first
   (`sandbox_paths.pinned`, still writable): a mount point cannot be renamed or removed, so
   `mv .claude x; mkdir .claude` cannot put a writable agents folder where tether looks. The
   paths under the state directory (hidden behind its tmpfs) are left out; a missing state
   directory inside the root gets a placeholder. A feature that reads configuration from the
   project takes its path from `project_config` and adds a `ConfigPath` there; missing paths
   get placeholders (a file holds the entry's `stand_in`; a missing instruction file is an
   empty folder, which the loader skips as not a file, so the fallback beside it still reads),
   reference-counted by `Placeholders` across concurrent commands. `sandbox._interpreter_args`
   binds `sys.prefix`, `sys.exec_prefix` and `sys.base_prefix` read-only when they lie under
   `/tmp` (outside the root), which the private `/tmp` would otherwise hide.
   `refuse_if_keys_have_other_names` raises `KeysLinked` (an OSError, so run_cmd reports it)
   when a file of `secret_files.SECRET_FILES` has a hard link: the tmpfs hides a path, not an inode.
   `run_cmd(unsandboxed=true, reason=...)` runs outside; `ApprovalPolicy.escalation_verdict`
   asks (showing the reason) unless `sandbox_escalation` is on and an allow rule with a real
   pattern covers the command; `send_input` to a session that `ShellSessions.runs_unconfined`
   (wired through `ToolContext.runs_unconfined`) asks unless `sandbox_escalation` is on.
   The secrets check on command text applies to such calls.
5. `runtime.undo_hooks`: before a file tool runs, `GitOps.snapshot_before` records the paths it
   names; after it succeeds, `GitOps.commit_paths` commits exactly the paths it changed.
6. `git_guard.hardened_git` builds every git invocation tether makes (`git_repo._Repo`,
   `tools/git.py`, `tools/file_search.py` search listing, `ui/terminal/prompt.py` completion, through
   `run_hardened` for the one-off calls). It reads `git config -z --list --show-scope`
   (includes followed, nothing run; names from the system, global and command scopes are the
   user's and kept, so Git LFS works) and overrides, through `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n` (placed after every
   config file and immune to `=` in a subsection name), each `filter.NAME.*`, `diff.NAME.*`,
   `merge.NAME.driver`, `remote.NAME.*pack`, `protocol.NAME.allow` and `gpg.NAME.program`,
   plus `NEUTRAL_CONFIG` (fsmonitor, `core.hooksPath=/dev/null`, pager, editors, askpass,
   credential helper, sshCommand, gpg signing, auto gc, submodule recursion) and
   `NEUTRAL_ENV` (`GIT_ALLOW_PROTOCOL=` refuses every transport, `GIT_TERMINAL_PROMPT=0`,
   `GIT_PAGER=cat`). A config that cannot be read means git is not run, and so does a
   repository `core.worktree` that `git rev-parse --show-toplevel` shows to be another folder
   than the one holding the `.git` (`refuse_foreign_worktree`). Commands that would
   start a git inside a submodule (which reads the submodule's own config) are avoided:
   `--ignore-submodules=dirty` for status and diff, `_Repo.stage_changes` instead of
   `git add -A`. The post-commit hook runs only with the `git_post_commit_hook` setting, found
   with `HardenedGit.env(repository_hooks=True)` and run with the user's plain environment.
"""
