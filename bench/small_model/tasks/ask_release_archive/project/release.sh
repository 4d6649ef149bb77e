#!/usr/bin/env bash
# Packs a release of the project into dist/: ./release.sh VERSION
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 VERSION" >&2
    exit 2
fi
version="$1"
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "release.sh: VERSION must look like 1.2.3, not '$version'" >&2
    exit 2
fi

# The project's name, from pyproject.toml.
project="$(sed -n 's/^name = "\(.*\)"$/\1/p' pyproject.toml | head -n 1)"

# Dots in archive names confused the old upload form, so the version is written with dashes.
stamp="${version//./-}"
archive="dist/${project}_${stamp}.tar.gz"

mkdir -p dist
tar -czf "$archive" pyproject.toml README.md tally
echo "packed $archive"
