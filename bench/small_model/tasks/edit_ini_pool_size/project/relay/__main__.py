import sys

from relay.settings import service_settings

name = sys.argv[1] if len(sys.argv) > 1 else "web"
for key, value in sorted(service_settings(name).items()):
    print(f"{key} = {value}")
