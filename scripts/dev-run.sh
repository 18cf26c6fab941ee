#!/usr/bin/env bash
# make run: start hookrun serve on examples/ with an embedded NATS and a
# generated development secret.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! ./bin/hookrun serve --help >/dev/null 2>&1; then
  echo "make run: 'hookrun serve' is not built yet (issue 8); try 'make validate' meanwhile." >&2
  exit 1
fi
