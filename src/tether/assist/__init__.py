"""Help that lets a model do the work, above engine/: the request read once (`request.py`), the
check run after a change (`verify.py`), and the coach (`coach.py`) that applies the table of
rules on a turn's evidence (`rules.py`) and the ask-once policy for a call's reasons to wait
(`call_guard.py`). Only the runtime's wiring imports this package; the loop reaches it through
the protocols in `engine/turn_assist.py`."""

from .turn import Assist

__all__ = ["Assist"]
