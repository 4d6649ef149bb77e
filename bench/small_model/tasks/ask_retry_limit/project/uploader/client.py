import time

from . import policy


class UploadFailed(Exception):
    pass


def upload(path, send):
    """Send one file, retrying with backoff; raise UploadFailed when the retries run out."""
    with open(path, "rb") as f:
        data = f.read()
    for attempt in range(policy.MAX_UPLOAD_RETRIES + 1):
        try:
            return send(data)
        except OSError:
            if attempt == policy.MAX_UPLOAD_RETRIES:
                raise UploadFailed(path) from None
            time.sleep(policy.backoff(attempt))


def download(name, fetch):
    for attempt in range(policy.MAX_DOWNLOAD_RETRIES + 1):
        try:
            return fetch(name)
        except OSError:
            if attempt == policy.MAX_DOWNLOAD_RETRIES:
                raise
            time.sleep(policy.backoff(attempt))
