import json
from pathlib import Path

DEFAULTS = {"retries": 2, "timeout_s": 5}


def load_settings(path: str = "settings.json") -> dict:
    settings = dict(DEFAULTS)
    settings.update(json.loads(Path(path).read_text()))
    return settings
