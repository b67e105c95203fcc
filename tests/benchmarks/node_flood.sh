#!/bin/bash
# A node under a LAN attacker without the key, measured from outside: while a paired controller
# watches it (`edgetrain-cli monitor`, 1 Hz), an attacker holds CONNECTIONS unauthenticated TCP
# connections open (from 250 loopback addresses, reopening every one the node closes) and sends
# PROBES discovery probes a second (half of them small, as an amplification attack would, half
# padded, each from one of 250 addresses). Prints the paired controller's largest gap between
# two metrics samples, the node's RSS (first and last sample, largest), its open descriptors
# (sampled each second: the connections it really holds; the attacker's own count includes those
# waiting in the kernel's accept queue), and the bytes it answered probes with against the bytes
# it was sent.
#
#   tests/benchmarks/node_flood.sh [--build build/default] [--seconds 60]
#       [--connections 2000] [--probes 1000]
set -euo pipefail
BUILD=build/default
SECONDS_RUN=60
CONNECTIONS=2000
PROBES=1000
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --seconds) SECONDS_RUN=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --probes) PROBES=$2; shift 2 ;;
    *) echo "node_flood.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
OUT=$(mktemp -d)
NODE_PID=""
cleanup() {
    [ -n "$NODE_PID" ] && kill "$NODE_PID" 2>/dev/null && wait "$NODE_PID" 2>/dev/null
    rm -rf "$OUT"
}
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true

"$BUILD/bin/edgetrain-cli" key new "$OUT/cluster.key" >/dev/null 2>&1
DISCOVERY=$((40000 + RANDOM % 20000))
"$BUILD/bin/edgetrain-node" --name flooded --port 0 --discovery-port "$DISCOVERY" \
    --no-multicast --key-file "$OUT/cluster.key" --threads 1 --print-port \
    >"$OUT/port" 2>"$OUT/node.log" &
NODE_PID=$!
for _ in $(seq 50); do [ -s "$OUT/port" ] && break; sleep 0.1; done
PORT=$(head -1 "$OUT/port")
[ -n "$PORT" ] || { echo "node_flood.sh: the node did not start" >&2; cat "$OUT/node.log" >&2; exit 1; }

"$BUILD/bin/edgetrain-cli" monitor --nodes "127.0.0.1:$PORT" --key-file "$OUT/cluster.key" \
    --csv "$OUT/metrics.csv" --duration "$((SECONDS_RUN + 4))s" >/dev/null 2>"$OUT/monitor.log" &
MONITOR_PID=$!
sleep 2 # the controller is paired before the attack starts
# The node's open descriptors (its sockets), once a second: what the attacker really holds.
(while kill -0 "$NODE_PID" 2>/dev/null; do
    ls "/proc/$NODE_PID/fd" 2>/dev/null | wc -l
    sleep 1
done >"$OUT/fds") &
FDS_PID=$!

python3 - "$PORT" "$DISCOVERY" "$SECONDS_RUN" "$CONNECTIONS" "$PROBES" >"$OUT/attack.txt" <<'PY'
import errno, selectors, socket, sys, time
port, discovery, seconds, want, rate = (int(a) for a in sys.argv[1:6])
sources = ['127.0.%d.%d' % (1 + i // 250, 2 + i % 250) for i in range(250)]
def probe(pad):
    # CBOR {"kind": "edgetrain-probe", "protocol": 1[, "pad": bytes(pad)]}, by hand
    def text(s): return bytes([0x60 + len(s)]) + s.encode()
    body = text('kind') + bytes([0x6f]) + b'edgetrain-probe' + text('protocol') + b'\x01'
    if pad:
        return bytes([0xa3]) + body + text('pad') + b'\x59' + pad.to_bytes(2, 'big') + bytes(pad)
    return bytes([0xa2]) + body
small, padded = probe(0), probe(1200)
udp = []
for s in sources:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((s, 0)); u.setblocking(False)
    udp.append(u)
sel = selectors.DefaultSelector()
conns, opened, sent, answered, sent_n, answered_n = {}, 0, 0, 0, 0, 0
def open_one(i):
    global opened
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM); c.setblocking(False)
    c.bind((sources[i % len(sources)], 0))
    try: c.connect(('127.0.0.1', port))
    except BlockingIOError: pass
    conns[c.fileno()] = (c, i); sel.register(c, selectors.EVENT_READ); opened += 1
for i in range(want): open_one(i)
start = time.monotonic(); next_probe = start; k = 0; open_max = 0
while time.monotonic() - start < seconds:
    now = time.monotonic()
    while next_probe <= now:  # PROBES a second, alternating small and padded, across sources
        p = small if k % 2 == 0 else padded
        try: udp[k % len(udp)].sendto(p, ('127.0.0.1', discovery)); sent += len(p); sent_n += 1
        except OSError: pass
        k += 1; next_probe += 1.0 / rate
    for key, _ in sel.select(timeout=0.001):  # a closed connection is opened again
        c, i = conns.pop(key.fd); sel.unregister(c)
        try: data = c.recv(4096)
        except OSError: data = b''
        c.close(); open_one(i)
    for u in udp:
        while True:
            try: answered += len(u.recv(4096)); answered_n += 1
            except BlockingIOError: break
    open_max = max(open_max, len(conns))
print('connections_opened %d' % opened)
print('probes_sent %d bytes %d' % (sent_n, sent))
print('probe_answers %d bytes %d' % (answered_n, answered))
print('answer_to_probe_bytes %.3f' % (answered / max(sent, 1)))
PY
wait "$MONITOR_PID" || true
kill "$FDS_PID" 2>/dev/null || true

echo "node_flood.sh: ${SECONDS_RUN} s, ${CONNECTIONS} unauthenticated connections held, ${PROBES} probes/s"
cat "$OUT/attack.txt"
python3 - "$OUT/metrics.csv" <<'PY'
import csv, datetime, sys
rows = list(csv.DictReader(open(sys.argv[1])))
if len(rows) < 2:
    sys.exit('node_flood.sh: the paired controller got fewer than 2 samples')
t = [datetime.datetime.fromisoformat(r['time'].replace('Z', '+00:00')) for r in rows]
gaps = [(b - a).total_seconds() for a, b in zip(t, t[1:])]
rss = [int(r['agent_rss_bytes']) for r in rows]
print('paired_samples %d' % len(rows))
print('paired_largest_gap_seconds %.2f' % max(gaps))
print('node_rss_mib first %.1f last %.1f max %.1f' % (rss[0] / 2**20, rss[-1] / 2**20, max(rss) / 2**20))
PY
sort -n "$OUT/fds" | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "node_open_fds min %d max %d\n", lo, hi}'
grep -c "past the handshake caps" "$OUT/node.log" | sed 's/^/node_refusal_log_lines /'
