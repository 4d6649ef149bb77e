"""The terminal front end: streaming markdown output, theme, prompt and approval.

The interactive app, in detail:

`cli.main` with no `-p` runs `app.run_app`: `App.setup` builds the `TerminalUI` (the UI
protocol in a terminal), the runtime (with `asking.Asking`'s callbacks for `get_user_input` and
plan approval, and live command output, in `RunOptions`) and the prompt; `sessions.Sessions`
holds the conversation and its record from `SessionStore` (new, `-c` latest for the folder, or
`-r` by title/id) and saves it; `App.recap` prints a continued conversation's last exchanges
(`recent_exchanges`), and until a request of this run reports input tokens the status line
shows `runtime.estimated_tokens` of the history, marked `~`. `App.footer` counts a request that
a failure or Ctrl-C ended (`requests_made`, `tokens_used`: TurnResult counts only whole ones).
`trust.FolderTrust` asks whether to trust a folder with its own
rules and `trust.AlwaysAnswer` handles an [a]lways answer to an approval question. The prompt
comes first (`startup.StartUp`, which `App` extends): `App.setup` makes only the prompt, and the runtime (`App.build`: provider, tool
table, MCP, skills, the `TerminalUI`, the session) is built in a thread once the first prompt
is drawn (`App.build_in_background`, from the prompt's `pre_run`), so `app.py` imports what it
needs for that only at the top (the rest inside functions or under TYPE_CHECKING; `RunOptions`
lives in `engine/run_options.py` for the same reason). A continued session (`-c`, `-r`) is read
before the prompt (`store.session.continued_record`, kept as `App.continuing` for the banner's
recap) and handed to the build (`Sessions.with_record`). Only a start that may ask a question
builds first (`startup.asks_at_start`: `.permissions.json` or hooks in a folder never trusted,
`.mcp.json` in a trusted one); `--allow`/`--deny` rules are only parsed before the prompt
(`permissions.check_command_line_rules`: a bad rule is still a usage error at once). A
build that fails ends the app with its one-line message (a ValueError is a usage error, exit
2). Keys typed before the first prompt was drawn (the terminal still in line mode, Enter a line
feed) are read out at its first drawing (`typed_ahead.entering_early_keys`): the first line is
entered there, later ones are sent after it. Then `Runtime.start` runs as a background task; the status line says `starting…`
(`STARTING`) until both are done; a slash command waits for the build (`App.runtime_ready`)
and a request for both (`App.ready`). `App.read_loop` reads a
line: a slash command goes to `COMMANDS` (a `slash/table.CommandTable` that `slash/handlers.py` joins
from its own commands and each command module's table; one table drives dispatch, `/help` and completion); anything else is a turn. `App.run_cancellable` runs the turn as a task with a
SIGINT handler that cancels it, with terminal echo off (`keys_not_echoed`) so a typed key cannot
break the live region; cancellation propagates through the loop (which records a result for
every started call and keeps what the turn did as `TurnLoop.interrupted`, for the footer), the
UI settles, `Stopped.` and the footer are printed, and the session is saved. While the turn
runs, `queued.QueuedMessages.collecting` reads the lines the terminal (in line mode, echo off)
hands over as Enter ends them, through a prompt_toolkit input attached as a question's is (a
question takes the terminal and gives it back); each is shown as `queued:` and `read_loop` sends
them, in order, before it prompts again (lines a question's drain kept join them; Ctrl-C puts
them back in the input line). Lines printed while an input line or a question is up
(`App.say`, `TerminalUI.notice`: an MCP server ready) go through `fit.print_above_input`
(prompt_toolkit's `run_in_terminal`), so the prompt is drawn again below them; `fit` also
fits the status line to the width (`fit_parts`) and wraps questions between words. The
session is saved after every exchange; the first one also asks the model for a title.

Slash commands see the app only through `slash/context.CommandContext`, a Protocol: the console,
`say`, `ask_line`, `choose` and `confirm` (the app's `keyboard.Asker`), the runtime, the `Sessions`, the display switches (`show_thinking`,
`deepthink`, `exiting`), `ready`, `run_cancellable` and `rebuild`. What a command changes in the
runtime goes through a `Runtime` method: `switch_model`, `set_auto` (the approval policy holds
the one auto flag; `--auto` is only its start value), `set_plan_mode`, `add_session_rule`,
`reload_rules` (`RuleSet.reload_from` swaps the rules in place, so the policy sees them, and keeps
session rules), and `rebuilt(settings)`: a new runtime for `/connect` or a trust answer that
carries the session rules, plan mode, auto mode, auto-commit, the loaded skills and the
sub-agents' records over (`carry_session`) (`restarted` also starts it
and closes the old one; a start that fails keeps the old one). `tests/slash_context.py`
implements the Protocol with a real `Runtime` on the fake server, so
`tests/test_slash_commands.py` runs every command without a terminal.

`/connect` (`slash/connect_command.py`) takes `NAME [URL] [MODEL]`; picked from the list it
asks for the base URL too. `providers.connect.may_skip_key` (the base URL's host is not the
provider's default's) lets an empty key through and marks the provider ready without one; the choice
goes to `keys.ConnectionStore` with the base URL when it differs from the `Settings` default,
and `cli.remembered_connection` turns it into the settings layer below the environment (whose
`OPENAI_BASE_URL` still wins). `/diff` and `/commit` call `GitOps.uncommitted` (the
`diff_since` of HEAD on a private copy of the index) and `GitOps.commit_uncommitted`
(`store/git_commit.commit_everything`: `stage_changes` into the real index, `write-tree`,
`commit-tree`, compare-and-swap of HEAD; no hook runs), in a worker thread; the message is a
tool-free request whose reply the user approves or replaces. A rule an [a]lways answer saved is
added with `Runtime.add_saved_rule` carrying its file (`Rule.file`; every rule read from a file
has one), so `/perms` names the file and a rebuild reads it back from there; only a project
file that counts once the folder is trusted makes it a session rule. `App.handle` expands
`paste.Pastes` placeholders before anything else reads the line.

Everything model-supplied that reaches the screen (tool lines, the approval question, diffs,
notices, slash-command listings, reply text, command output) passes through
`visible.visible_pieces`, via `terminal_ui.shown` in the terminal and `visible.visible` in
headless progress lines: no control sequence a model writes reaches the terminal.

Reply text streams through `render.MarkdownStream`: a `BlockSplitter` cuts the stream
into markdown blocks at the points markdown-it would; finished blocks are printed once to the
scrollback and only the open block is redrawn in a transient `Live` region, throttled.

While a turn runs, the bottom of the terminal is one `activity.LiveRegion` (a transient rich
`Live`, on a terminal only): the open block (the `MarkdownStream` is given the region as its
`LiveHost` and hands it its view instead of starting a `Live` of its own), the lines of
`activity.Activity`, and the status line (`App.status_line`, the prompt's toolbar text). rich
erases a live region before every `console.print` and draws it again below, so the scrollback
only gets finished lines; for that reason command output and /think text are printed a whole
line at a time (the part line shows on the activity line). An asyncio ticker redraws it every
`TICK` so clocks move. `Activity` knows the model request (`request_started`, told by the loop
through the optional `ui_protocol.RequestEvents`; `received` counts streamed characters for the
estimated rate) and jobs under keys of their own (`begin`, `detail`, `restart`, `end`): each
tool call (keyed by call id; `command_output` sets the newest output line as its detail) and
each sub-agent (from `agent_event`). An MCP server or anything else that wants to be seen while
it works reports the same way. `TerminalUI.pause` erases the region before a question
(approval, `get_user_input`, plan approval); the next event draws it again; `settle` ends it
with the turn.

Approvals: `approval_question.ApprovalQuestion` shows the call (an edit's diff from
`preview.change_preview`; the `TerminalUI` then skips the diff after the call) and reads one
key with `keyboard.Asker.choose`: `y`, `a`, `n` (then an optional reason line) or Esc; another
key says under the question which keys answer it, and it waits on. `TerminalUI.approve` restarts the call's activity clock after the answer, and
`Dispatcher._gate` measures the wait (the approval lock included) so `Evidence.elapsed` leaves
it out. A command's line shows the summary's own duration only.

Questions: every question at the terminal goes through the app's `keyboard.Asker`. A choice
(`keyboard.Choices`: the approval, the trust question, a project's MCP server, a plan, `/commit`,
`/export` replacing a file or making a folder) is one key, read by `read_key` (a small
prompt_toolkit `Application`, so an arrow key's escape sequence is one key and not Esc); Esc is
no, and Enter is no where no is the default (`yes_no`). Free text is a line (`Asker.line`), also
the one a key asks for (a reason, an edited commit message: `fresh=False`, since what follows
that key is meant for it). No question takes keys typed before it was drawn:
`typed_ahead.TypedAhead.fresh` takes prompt_toolkit's store of keys read past the last input
(before the question runs), and reads out everything the terminal holds right after its first
drawing has been written (`after_render`, before any key reaches its bindings; the terminal's
answer to prompt_toolkit's cursor-position request is given back). What it took is kept as
text, the question says so, and `App.read_loop` puts it in the next input line.
"""
