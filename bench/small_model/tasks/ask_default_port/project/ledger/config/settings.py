import os
from dataclasses import dataclass

from . import defaults


@dataclass
class Settings:
    host: str
    port: int
    metrics_port: int


def load(env=os.environ):
    return Settings(
        host=env.get("LEDGER_HOST", defaults.HOST),
        port=int(env.get("LEDGER_PORT", defaults.PORT)),
        metrics_port=int(env.get("LEDGER_METRICS_PORT", defaults.METRICS_PORT)),
    )
