"""General mechanisms that help a model do the work, above core/: the request read once
(`request.py`) and the check run after a change (`verify.py`). Only the runtime's wiring
imports this package; the loop reaches it through the seam in `core/turn_assist.py`."""
