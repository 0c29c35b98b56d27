#!/usr/bin/env bash
# deploy/run_local.sh N: N replicas of the app (`streamlit run streamlit_app.py`) on loopback ports and HAProxy
# (Debian's `haproxy` package) in front of them with deploy/haproxy.cfg, the same policy as deploy/compose.yaml:
# the app without containers. Stops every process it started when it exits (Ctrl+C, SIGTERM, or HAProxy
# stopping).
#
#   deploy/run_local.sh 2                          # then open http://127.0.0.1:8500
#
# Environment (all optional):
#   PORT                the proxy's port (default 8500), on 127.0.0.1 unless HOST says otherwise
#   HOST                the proxy's address (default 127.0.0.1; 0.0.0.0 to serve a classroom network)
#   REPLICA_PORTS       the replicas' ports, space-separated, N of them (default 8501 ... 8500+N)
#   RUN_DIR             where logs and pid files go (default: a new temporary folder, removed on exit);
#                       replica-<i>.log, replica-<i>.pid (i = 1..N), haproxy.log, servers.cfg
#   HAPROXY             the haproxy binary (default: haproxy on PATH, else /usr/sbin/haproxy)
#   HAPROXY_COOKIE_KEY  secret for the stickiness cookie's value (default: a random one per start)
#   PYTHON              the Python that has the app's requirements (default: python on PATH, e.g. the venv's)
#   ATTENTION_BLAS_THREADS  BLAS threads per learner's run in each replica (default 1: explorer/shell/blas.py)
set -euo pipefail

usage() { echo "usage: $0 N   (N replicas, 1..16; see the comments at the top for the environment)" >&2; exit 2; }
[[ $# -eq 1 && "$1" =~ ^[0-9]+$ ]] || usage
N=$1
(( N >= 1 && N <= 16 )) || usage

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PORT=${PORT:-8500}
HOST=${HOST:-127.0.0.1}
read -r -a PORTS <<< "${REPLICA_PORTS:-$(seq -s ' ' 8501 $((8500 + N)))}"
(( ${#PORTS[@]} == N )) || { echo "REPLICA_PORTS has ${#PORTS[@]} ports for $N replicas" >&2; exit 2; }
HAPROXY=${HAPROXY:-$(command -v haproxy || echo /usr/sbin/haproxy)}
[[ -x "$HAPROXY" ]] || { echo "haproxy not found: apt-get install haproxy (or set HAPROXY)" >&2; exit 1; }
PYTHON=${PYTHON:-python}
command -v "$PYTHON" >/dev/null || PYTHON=python3

if [[ -n "${RUN_DIR:-}" ]]; then
  mkdir -p "$RUN_DIR"; KEEP_RUN_DIR=1
else
  RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/attention-explorer-replicas.XXXXXX"); KEEP_RUN_DIR=0
fi

PIDS=()
cleanup() {
  trap - EXIT INT TERM
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  (( KEEP_RUN_DIR )) || rm -rf "$RUN_DIR"
  echo "run_local.sh: stopped ${#PIDS[@]} processes" >&2
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1) the replicas: README's command, headless, on loopback, never reloading on a file change
cd "$ROOT"
for i in $(seq 1 "$N"); do
  "$PYTHON" -m streamlit run streamlit_app.py \
    --server.headless true --server.address 127.0.0.1 --server.port "${PORTS[i-1]}" \
    --server.fileWatcherType none --server.runOnSave false --browser.gatherUsageStats false \
    > "$RUN_DIR/replica-$i.log" 2>&1 < /dev/null &
  PIDS+=($!)
  echo $! > "$RUN_DIR/replica-$i.pid"
done

# 2) wait until every replica answers its health check (HAProxy would mark a starting one down, then up again)
healthy() { "$PYTHON" - "$1" <<'PY'
import sys, urllib.request
try:
    urllib.request.urlopen(f"http://{sys.argv[1]}/_stcore/health", timeout=2).read()
except OSError:
    sys.exit(1)
PY
}
for i in $(seq 1 "$N"); do
  for _ in $(seq 1 240); do
    healthy "127.0.0.1:${PORTS[i-1]}" && break
    kill -0 "${PIDS[i-1]}" 2>/dev/null || { echo "replica $i exited:" >&2; tail -n 20 "$RUN_DIR/replica-$i.log" >&2; exit 1; }
    sleep 0.5
  done
  healthy "127.0.0.1:${PORTS[i-1]}" || { echo "replica $i did not answer within 120 s" >&2; exit 1; }
done

# 3) HAProxy: the shared policy, then this run's server list
{
  echo "# written by deploy/run_local.sh: the replicas of this run"
  echo "backend replicas"
  for i in $(seq 1 "$N"); do echo "    server app$i 127.0.0.1:${PORTS[i-1]}"; done
} > "$RUN_DIR/servers.cfg"
export HAPROXY_BIND="$HOST:$PORT"
export HAPROXY_COOKIE_KEY=${HAPROXY_COOKIE_KEY:-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')}
"$HAPROXY" -c -q -f "$ROOT/deploy/haproxy.cfg" -f "$RUN_DIR/servers.cfg"
"$HAPROXY" -db -f "$ROOT/deploy/haproxy.cfg" -f "$RUN_DIR/servers.cfg" > "$RUN_DIR/haproxy.log" 2>&1 < /dev/null &
HAPROXY_PID=$!
PIDS+=("$HAPROXY_PID")
echo "$HAPROXY_PID" > "$RUN_DIR/haproxy.pid"
PROXY="$([[ $HOST == 0.0.0.0 ]] && echo 127.0.0.1 || echo "$HOST"):$PORT"
for _ in $(seq 1 40); do healthy "$PROXY" && break; sleep 0.25; done
healthy "$PROXY" || { echo "HAProxy does not answer on $HAPROXY_BIND:" >&2; tail -n 20 "$RUN_DIR/haproxy.log" >&2; exit 1; }

echo "Attention Explorer behind HAProxy at http://$PROXY: $N replica(s) (logs in $RUN_DIR; Ctrl+C stops all)"
# Until HAProxy stops (or this script is stopped); a replica that dies is HAProxy's business (health checks).
wait "$HAPROXY_PID" || true
