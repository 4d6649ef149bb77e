#!/usr/bin/env bash
set -euo pipefail
mkdir -p "$1/backup"
cp "$1"/*.txt "$1/backup/"
