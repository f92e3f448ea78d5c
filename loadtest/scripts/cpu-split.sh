#!/bin/bash
# Prints, once a second until stopped, the CPU use (percent of one core) of
# redis-server, of every `jumpgate serve` process together, and of every
# jumpgate-loadtest process together (the tester and the echo server it
# starts), read from /proc/PID/stat. Run it beside a `bench`:
#
#   loadtest/scripts/cpu-split.sh > /tmp/cpu.txt &
#   ./target/release/jumpgate-loadtest bench --idle 10 --duration 5 --protocol 2 \
#       --server-cpus 0 --client-cpus 1 --redis-url redis://127.0.0.1:16409/0
#   kill %1
#
# The phases show as runs of high values; the Redis phase is the last.
set -u
hz=$(getconf CLK_TCK)
declare -A prev
while true; do
  line="$(date +%T)"
  for name in redis-server "jumpgate serve" jumpgate-loadtest; do
    total=0
    for pid in $(pgrep -f "$name"); do
      ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
      total=$((total + ticks))
    done
    key=${name// /_}
    delta=$((total - ${prev[$key]:-$total}))
    prev[$key]=$total
    line="$line $key=$((delta * 100 / hz))"
  done
  echo "$line"
  sleep 1
done
