#!/usr/bin/env bash
# Prints the steps that would publish the site (a dry run): publish.sh [VERSION]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/config.env"

version="${1:-latest}"
release="$TARGET_DIR/releases/$version"

echo "site:    $SITE_NAME"
echo "release: $release"
echo "link:    $TARGET_DIR/current -> $release"
echo "keep:    the newest $KEEP_RELEASES releases in $TARGET_DIR/releases"
