#!/usr/bin/env bash
# Prints the next version: ./bump.sh 1.4.2 minor -> 1.5.0
set -euo pipefail

if [ "$#" -ne 2 ]; then
    echo "usage: $0 VERSION major|minor|patch" >&2
    exit 1
fi
IFS=. read -r major minor patch <<< "$1"
case "$2" in
    major) echo "$((major + 1)).0.0" ;;
    minor) echo "$major.$((minor + 1)).$patch" ;;
    patch) echo "$major.$minor.$((patch + 1))" ;;
    *) echo "bump.sh: the part must be major, minor or patch, not '$2'" >&2; exit 1 ;;
esac
