#!/usr/bin/env bash
# Start the docs server on the team's usual port.
set -euo pipefail
export APP_PORT=9000
exec python serve.py "$@"
