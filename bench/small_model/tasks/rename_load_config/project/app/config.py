import json
from pathlib import Path

DEFAULTS = {"name": "app", "workers": 2, "debug": False}


def load_cfg(path):
    """The settings of a JSON file laid over the defaults."""
    settings = dict(DEFAULTS)
    settings.update(json.loads(Path(path).read_text()))
    return settings
