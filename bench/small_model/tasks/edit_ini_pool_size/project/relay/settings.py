"""Reads a service's settings from deploy/services.ini ([DEFAULT] fills in what a service
does not set)."""

import configparser
from pathlib import Path

INI = Path(__file__).resolve().parent.parent / "deploy" / "services.ini"


def service_settings(name: str) -> dict[str, str]:
    parser = configparser.ConfigParser()
    parser.read(INI, encoding="utf-8")
    return dict(parser[name])
