#!/bin/sh
# Quick start, command one: install what is missing (Debian 12), build xpfo,
# and run a real program under it with its statistics (make demo).  The
# steps live in .ci/setup, which CI runs through this script.
exec sh "$(dirname "$0")/.ci/setup" "$@"
