#!/usr/bin/env bash
set -euo pipefail
mkdir -p "$1/backup"
n=0
for f in "$1"/*; do [ -f "$f" ] && cp "$f" "$1/backup/" && n=$((n+1)); done
echo "copied $n files"
