#!/usr/bin/env bash
# Writes a small master state directory with the mcctl jar JAR into OUT (its master/ state directory and the
# layout record, no bucket files), and lists the mappings it holds in OUT/expected-mappings.txt:
#   write-state.sh JAR OUT [master start options, e.g. --ha etcd://127.0.0.1:2379]
# Two tenants, an overwrite, a remove whose pages wait in quarantine behind a read lease, a snapshot, then log
# records after it (an offload, an overwrite, a remove); the master is killed with SIGKILL so nothing is written at
# stop. Ports 47051 (gRPC) and 47003 (metrics) on 127.0.0.1 must be free.
set -euo pipefail
jar="$(readlink -f "$1")"
out="$2"
shift 2
work="$(mktemp -d)"
trap 'kill -9 "$master" 2>/dev/null || true; rm -rf "$work"' EXIT
mcctl() { java -jar "$jar" "$@" --master 127.0.0.1:47051; }
object() { head -c "$2" /dev/zero | tr '\0' "$3" > "$work/$1"; echo "$work/$1"; }

java -jar "$jar" master start --root "$work/root" --bucket-count 4 --bucket-size 1MiB --page-size 4KiB --bind 127.0.0.1 \
    --port 47051 --metrics-port 47003 --read-lease 1h --snapshot-interval 1h --wal-segment-size 1MiB "$@" > "$work/master.log" 2>&1 &
master=$!
for _ in $(seq 300); do
  grep -q 'serving' "$work/master.log" && break
  kill -0 "$master" 2>/dev/null || break
  sleep 0.2
done
grep -q 'serving' "$work/master.log" || { cat "$work/master.log" >&2; exit 1; }

mcctl offload alpha "$(object a1 100 a)"
mcctl offload beta "$(object b1 5000 b)"
mcctl offload shared "$(object s1 300 s)"
mcctl offload gamma "$(object g1 9000 g)" --tenant team-b
mcctl offload delta "$(object d1 4096 d)" --tenant team-b
mcctl offload shared "$(object s2 700 S)" --tenant team-b
mcctl offload beta "$(object b2 6000 B)" --overwrite
mcctl get gamma --tenant team-b --out "$work/read" # a read lease: gamma's pages wait in quarantine after the remove
mcctl rm gamma --tenant team-b
mcctl snapshot create
mcctl offload epsilon "$(object e1 12000 e)"
mcctl offload alpha "$(object a2 200 A)" --overwrite
mcctl rm delta --tenant team-b
mcctl offload zeta "$(object z1 1 z)" --tenant team-b
{
  echo "# tenant key size crc32c bucket-file offset, as 'mcctl ls -o json' of the build that wrote this state listed them"
  for tenant in default team-b; do
    mcctl ls --tenant "$tenant" -o json > "$work/ls.json"
    /usr/bin/python3 -c '
import json, sys
tenant = sys.argv[2]
for entry in json.load(open(sys.argv[1]))["keys"]:
    print(tenant, entry["key"], entry["size"], entry["crc32c"], entry["file"].rsplit("/", 1)[1], entry["offset"])' "$work/ls.json" "$tenant"
  done
} > "$work/expected-mappings.txt"
kill -9 "$master"
wait "$master" 2>/dev/null || true
mkdir -p "$out"
cp -r "$work/root/master" "$out/"
cp "$work/root/mooncake.layout.json" "$out/" 2>/dev/null || true
cp "$work/expected-mappings.txt" "$out/"
rm -f "$out/master/in_use.lock"
