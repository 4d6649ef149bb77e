import sys

from app.config import load_cfg


def describe(path):
    cfg = load_cfg(path)
    mode = "debug" if cfg["debug"] else "normal"
    return f"{cfg['name']}: {cfg['workers']} workers, {mode} mode"


if __name__ == "__main__":
    print(describe(sys.argv[1] if len(sys.argv) > 1 else "settings.json"))
