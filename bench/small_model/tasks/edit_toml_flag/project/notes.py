from pathlib import Path

import tomllib

SETTINGS = tomllib.loads((Path(__file__).parent / "settings.toml").read_text())

if __name__ == "__main__":
    print("telemetry", "on" if SETTINGS["telemetry"]["enabled"] else "off")
