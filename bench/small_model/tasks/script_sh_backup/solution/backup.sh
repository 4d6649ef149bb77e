#!/usr/bin/env bash
# Copy the .txt files of a folder into its backup/ subfolder: ./backup.sh DIR
set -euo pipefail
dir="${1:?usage: backup.sh DIR}"
mkdir -p "$dir/backup"
count=0
for f in "$dir"/*.txt; do
  [ -e "$f" ] || continue
  cp "$f" "$dir/backup/"
  count=$((count + 1))
done
echo "copied $count files"
