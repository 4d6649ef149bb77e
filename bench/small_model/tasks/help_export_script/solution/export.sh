#!/usr/bin/env bash
# Converts the till's stock list to stock.json for the web site.
set -euo pipefail
cd "$(dirname "$0")"
python tools/tabconv.pyz --sep ';' data/stock.csv -o stock.json
