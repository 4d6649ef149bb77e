#!/usr/bin/env bash
# Install aider (aider-chat from PyPI) into a venv of its own, outside the repository, for
# `run.py --agent aider`. aider pins many dependencies; it must not share tether's environment.
#
#   bash bench/small_model/setup_aider.sh            # into ~/.cache/tether-bench-aider
#   AIDER_VENV=/some/where bash bench/small_model/setup_aider.sh
#   AIDER_VERSION=0.86.1 bash ...                    # a given version (default: the newest)
#
# Prints the aider executable's path at the end; run.py finds it there by default
# (--aider-bin overrides).
set -euo pipefail

venv="${AIDER_VENV:-$HOME/.cache/tether-bench-aider}"
python="${AIDER_PYTHON:-python3}"
spec="aider-chat${AIDER_VERSION:+==$AIDER_VERSION}"

if ! "$python" -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] <= (3, 12)))'; then
    echo "setup_aider: $python is $("$python" --version 2>&1); aider-chat needs Python 3.10-3.12" >&2
    echo "             (set AIDER_PYTHON to such an interpreter)" >&2
    exit 2
fi
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "$spec"
"$venv/bin/aider" --version
echo "$venv/bin/aider"
