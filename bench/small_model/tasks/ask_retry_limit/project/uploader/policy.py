"""How hard the client tries before it reports a failure."""

MAX_DOWNLOAD_RETRIES = 4
MAX_UPLOAD_RETRIES = 11
BACKOFF_SECONDS = 1.5


def backoff(attempt: int) -> float:
    return BACKOFF_SECONDS * (2 ** attempt)
