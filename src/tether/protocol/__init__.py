"""The text tool-call protocol: `<tool_call>` rendering, parsing and repair.

Models without native function calling (and small local models that write calls
as text anyway) send calls as text:

    <tool_call>
    {"name": "write_file", "arguments": {"filepath": "game.py"}}
    <content>
    print("hi")
    </content>
    </tool_call>

File bodies travel in raw blocks named after the tool's `block_params`, so they
never need escaping. Parsing repairs what is safe to repair and refuses what may
have been cut off: closing the brackets after a half-written string would let
write_file replace a real file with a partial one.

One scanner (`scan._Segmenter`) decides where calls and `<think>` blocks begin and
end, for the streamed display (`StreamFilter`) and for the final parse
(`parse_reply`) alike, so what the user saw and what the history keeps agree.

The package's modules, in the order a reply meets them: `tags` (the vocabulary),
`scan` (the scanner, StreamFilter), `segments` (a whole reply cut into segments),
`jsonrepair` (almost-JSON decoded), `shapes` (the forms a call comes in),
`refusals` (what a refused call is told), `parse` (parse_reply), and for the way
back `render` (the tool menu, a call as text) and `history` (a history as text); for
the small profile `grammar` (the GBNF of a reply), `callstop` (where a streamed call ends, where a code block closes)
and `resume` (what carries on a call a reply left open between its raw blocks).
The names below are the package's interface; the underscored ones in the modules
are its own.
"""

from .callstop import BlockStop, CallStop
from .grammar import call_grammar
from .history import RESULT_MARKERS, TextHistory, cut_invented_results, render_history_as_text
from .parse import ParseResult, parse_reply
from .render import render_call_as_text, render_tool_prompt
from .resume import resumption
from .scan import StreamFilter
from .shapes import repair_block_values
from .tags import (
    CALL_CLOSE,
    CALL_OPEN,
    DEFAULT_BLOCK_NAMES,
    FUNCTION_CLOSE,
    FUNCTION_OPEN,
    PARAM_CLOSE,
    PARAM_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
)

__all__ = [
    "CALL_CLOSE",
    "CALL_OPEN",
    "DEFAULT_BLOCK_NAMES",
    "FUNCTION_CLOSE",
    "FUNCTION_OPEN",
    "PARAM_CLOSE",
    "PARAM_OPEN",
    "RESULT_MARKERS",
    "THINK_CLOSE",
    "THINK_OPEN",
    "BlockStop",
    "CallStop",
    "ParseResult",
    "StreamFilter",
    "TextHistory",
    "call_grammar",
    "cut_invented_results",
    "parse_reply",
    "render_call_as_text",
    "render_history_as_text",
    "render_tool_prompt",
    "repair_block_values",
    "resumption",
]
