#!/bin/sh
# Runs one load-test bench against a jumpgate server pinned to core 0 and
# prints the server's CPU use (percent of one core) for every second of
# the run, read from /proc/PID/stat. The saturated phase is the run of
# high values near the end of the jumpgate phases.
#
#   loadtest/scripts/server-cpu.sh [RULE_SET]      (default: american)
#
# Needs release builds: cargo build --release -p jumpgate-server -p jumpgate-loadtest
set -eu
rule_set="${1:-american}"
port=18556
taskset -c 0 ./target/release/jumpgate serve --listen "127.0.0.1:$port" >/dev/null 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
sleep 1
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null; }
hz=$(getconf CLK_TCK)
(
  prev=$(ticks)
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    cur=$(ticks) || exit 0
    printf '%s ' $(( (cur - prev) * 100 / hz ))
    prev=$cur
  done
) > "/tmp/jumpgate-server-cpu-$rule_set.txt" &
sampler=$!
./target/release/jumpgate-loadtest bench --server "ws://127.0.0.1:$port/ws" --server-pid "$pid" \
  --idle 10 --duration 5 --client-cpus 1 --rule-set "$rule_set" 2>&1 \
  | grep -E '^(latency|saturated) jumpgate'
kill "$pid"
wait "$sampler" 2>/dev/null || true
echo "server CPU % per second: $(cat "/tmp/jumpgate-server-cpu-$rule_set.txt")"
