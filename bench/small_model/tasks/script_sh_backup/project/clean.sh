#!/usr/bin/env bash
# Remove editor leftovers (*~ and .*.swp files) from a folder: ./clean.sh DIR
set -euo pipefail
dir="${1:?usage: clean.sh DIR}"
find "$dir" -maxdepth 1 \( -name '*~' -o -name '.*.swp' \) -print -delete
