#!/usr/bin/env bash
# Saturated moves/s of one instance on the embedded store (the data
# directory, every commit fsynced) against the same binary in memory, one
# after the other, each server pinned to core 0 and the load tester to
# core 1. Usage: loadtest/scripts/embedded-vs-memory.sh [PROFILE_DIR]
# (default target/release; build it first with
# `cargo build --release -p jumpgate-server -p jumpgate-loadtest`).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-target/release}
data=$(mktemp -d /tmp/jumpgate-bench-data.XXXXXX)
trap 'kill $pid 2>/dev/null || true; rm -rf "$data"' EXIT
export JUMPGATE_MOVE_CLOCK_MS=600000 RUST_LOG=warn \
  JUMPGATE_TOKEN_SECRET=jumpgate-loadtest-token-secret-0123456789 \
  JUMPGATE_MAX_CONNECTIONS=17000 \
  JUMPGATE_MAX_CONNECTIONS_PER_ADDRESS=1000000000 \
  JUMPGATE_MAX_CONNECTIONS_PER_IDENTITY=1000000000 \
  JUMPGATE_MESSAGES_PER_SECOND_PER_ADDRESS=0 \
  JUMPGATE_ROOMS_PER_MINUTE_PER_ADDRESS=0 \
  JUMPGATE_ROOMS_PER_MINUTE_PER_IDENTITY=0 \
  JUMPGATE_HTTP_REQUESTS_PER_SECOND_PER_ADDRESS=0
for store in memory embedded; do
  port=$((19100 + RANDOM % 500))
  if [ "$store" = memory ]; then flag=(--memory); else flag=(--data-dir "$data"); fi
  taskset -c 0 "$bin/jumpgate" serve --listen "127.0.0.1:$port" "${flag[@]}" &
  pid=$!
  for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "== $store"
  "$bin/jumpgate-loadtest" bench --server "ws://127.0.0.1:$port/ws" --server-pid "$pid" \
    --client-cpus 1 --protocol 2 --duration "${DURATION:-8}" --idle 500 \
    --out-json "/tmp/jumpgate-bench-$store.json" | grep -iE "saturat|moves/s|p50|p99" || true
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
[ "$(ls -A "$data")" ] && du -sh "$data"
