"""The web tools' table: search_web, get_url and call_api (see `tools/web.py`).

Their handlers are the methods of one `web.WebTools` (the guarded client, the search setup,
the request's taint), made by `web.web_setup` at the first call of any of the three: a start
builds these entries without importing the web modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.toolspec import Shared, Tool
from ..safety.web_guard import CALL_API, GET_URL, SEARCH_WEB, WebTaint
from .limits import params_named

if TYPE_CHECKING:
    from ..safety.netguard import MayReach
    from ..store.config import Settings


def web_parts(settings: Settings, may_reach: MayReach, taint: WebTaint) -> Shared:
    """What the web tools share (`web.web_setup`'s WebTools), made at the first call of any:
    `may_reach` says which private hosts an allow rule names; `taint` is the request's record
    the approval policy reads."""
    return Shared("tether.tools.web:web_setup", settings=settings, may_reach=may_reach, taint=taint)


def web_tools(settings: Settings, web: Shared) -> list[Tool]:
    """The three web tools over one client (`web_parts`); their timeouts cover a slow source
    or page."""
    search_seconds = 2 * (settings.web_source_timeout + 1) + 2 * settings.web_timeout + 10
    fetch_seconds = 2 * settings.web_timeout * 6 + 10  # every redirect hop may take it
    cap = settings.web_max_text + 2_000
    return [
        Tool(
            name=SEARCH_WEB,
            description=(
                "Search the web (several search sources at once), read the best pages and return "
                "their passages that match the query, or say that nothing relevant was found."
            ),
            params=params_named("SearchWebParams"), handler=web.method("search_web"), network=True, main_arg="query",
            timeout=search_seconds, result_cap=cap,
        ),
        Tool(
            name=GET_URL,
            description=(
                "Read a web page with GET: HTML comes back as readable text (raw: the body as "
                "received), capped; a redirect to another host is reported, not followed."
            ),
            params=params_named("GetUrlParams"), handler=web.method("get_url"), network=True, main_arg="url",
            timeout=fetch_seconds, result_cap=cap,
        ),
        Tool(
            name=CALL_API,
            description=(
                "Call an HTTP API: method, URL, optional headers and a JSON or text body; returns "
                "the status, the headers and the body (JSON pretty-printed), capped."
            ),
            params=params_named("CallApiParams"), handler=web.method("call_api"), network=True, main_arg="url",
            timeout=fetch_seconds, result_cap=cap,
        ),
    ]

