#!/usr/bin/env bash
# scripts/walk.sh [CHECKOUT [OUT]]: the files a delivery and a run pass
# through (issue 25's "walks"), measured by running them. A coverage build of
# CHECKOUT's hookrun (default: this one) runs as `hookrun ingress` and then
# `hookrun runner` against a nats-server built from the same module, on
# loopback: the delivery walk is the functions `ingress` ran for one signed
# pull_request delivery of examples/events, minus those it ran idle and for
# one API list; the run walk is the functions `runner` ran for that run
# (examples/hello.yaml, host steps as this user), minus those it ran idle.
# It prints each walk's functions and files, by file; OUT (default a
# temporary directory) keeps the covdata and logs. Compare two commits by
# running it on a worktree of each. Needs go, curl and openssl.
set -euo pipefail
SRC=$(cd "${1:-$(dirname "$0")/..}" && pwd)
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
[ -z "$(ls -A "$OUT")" ] || { echo "walk.sh: $OUT is not empty" >&2; exit 2; }
mkdir -p "$OUT/data" "$OUT/js"
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
cd "$SRC"
MOD=$(go list -m)
go build -cover -covermode=atomic -coverpkg="$MOD/..." -o "$OUT/hookrun" ./cmd/hookrun
go build -o "$OUT/nats-server" github.com/nats-io/nats-server/v2
PORT=$((20000 + RANDOM % 20000)); NPORT=$((PORT+1))
"$OUT/nats-server" -js -sd "$OUT/js" -a 127.0.0.1 -p $NPORT >"$OUT/nats.log" 2>&1 &
NP=$!
SECRET=devsecret123; TOKEN=devtoken1234567890abcdef
cat > "$OUT/cfg.yaml" <<YAML
listen: 127.0.0.1:$PORT
data_dir: $OUT/data
workflows: $SRC/examples
allow_repos: ["Codertocat/Hello-World"]
nats:
  url: nats://127.0.0.1:$NPORT
github:
  webhook_secret: $SECRET
api:
  token: $TOKEN
runner:
  host_steps: same_user
runs:
  request_key: 0123456789abcdef0123456789abcdef
YAML
sleep 0.5
run_phase() { # name action [mode]
  mkdir -p "$OUT/$1"
  GOCOVERDIR="$OUT/$1" "$OUT/hookrun" ${3:-ingress} --config "$OUT/cfg.yaml" >"$OUT/$1.log" 2>&1 &
  HP=$!
  if [ "${3:-ingress}" = ingress ]; then for i in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done; fi
  sleep 2
  eval "$2"
  sleep 1
  kill -TERM $HP; wait $HP || true
}
BODY=$SRC/examples/events/pull_request.opened.json
sig=$(openssl dgst -sha256 -hmac "$SECRET" < "$BODY" | sed 's/^.* //')
deliver='curl -s -o /dev/null -w "%{http_code}\n" -X POST http://127.0.0.1:$PORT/hooks/github -H "Content-Type: application/json" -H "X-GitHub-Event: pull_request" -H "X-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958" -H "X-Hub-Signature-256: sha256=$sig" --data-binary @$BODY'
api='curl -s -o /dev/null -w "%{http_code}\n" -H "Authorization: Bearer $TOKEN" http://127.0.0.1:$PORT/api/v1/runs'
run_phase idle true
run_phase api "$api"
run_phase ridle true runner
run_phase deliv "$api; $deliver"
run_phase rrun "sleep 4" runner
kill $NP; wait $NP 2>/dev/null || true
for p in idle api deliv ridle rrun; do go tool covdata func -i "$OUT/$p" > "$OUT/$p.func"; done
# covdata func prints "file:line: func pct"; a function ran if its pct is not 0.0%.
ran() { awk '$NF!="0.0%" && $1!="total" {print $1" "$2}' "$1" | sed 's/:[0-9]*: / /' | sort -u; }
ran "$OUT/idle.func" > "$OUT/idle.ran"; ran "$OUT/api.func" > "$OUT/api.ran"; ran "$OUT/deliv.func" > "$OUT/deliv.ran"
cat "$OUT/idle.ran" "$OUT/api.ran" | sort -u > "$OUT/base.ran"
comm -23 "$OUT/deliv.ran" "$OUT/base.ran" > "$OUT/walk.ran"
sed "s#^$MOD/##" "$OUT/walk.ran" | awk '{print $1}' | sort | uniq -c | sort -k2 > "$OUT/walk.files"
echo "DELIVERY: functions: $(wc -l < "$OUT/walk.ran")  files: $(wc -l < "$OUT/walk.files")"
cat "$OUT/walk.files"
ran "$OUT/ridle.func" > "$OUT/ridle.ran"; ran "$OUT/rrun.func" > "$OUT/rrun.ran"
comm -23 "$OUT/rrun.ran" "$OUT/ridle.ran" > "$OUT/rwalk.ran"
sed "s#^$MOD/##" "$OUT/rwalk.ran" | awk '{print $1}' | sort | uniq -c | sort -k2 > "$OUT/rwalk.files"
echo "RUN: functions: $(wc -l < "$OUT/rwalk.ran")  files: $(wc -l < "$OUT/rwalk.files")"
cat "$OUT/rwalk.files"
