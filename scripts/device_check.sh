#!/usr/bin/env bash
# scripts/device_check.sh: the entry point that CI (.ci/run), the docs and CTest call; the program is
# device_check.py beside it (a bundle carries both): `scripts/device_check.sh --help` says what it does.
exec python3 "$(dirname "$0")/device_check.py" "$@"
