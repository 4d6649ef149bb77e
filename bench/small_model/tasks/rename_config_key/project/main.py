import sys

from fetcher.client import Client
from fetcher.config import load_settings

settings = load_settings(sys.argv[1] if len(sys.argv) > 1 else "settings.json")
print(Client(settings).plan("/status"))
