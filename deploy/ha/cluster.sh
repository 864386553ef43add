#!/usr/bin/env bash
# A three-node Patroni cluster on loopback, for trying high availability and
# for the tests: etcd, three Patroni nodes (each with its PostgreSQL) and
# HAProxy, on free ports of 127.0.0.1, everything under DIR.
#
#   deploy/ha/cluster.sh start DIR   # DIR must not exist; prints the settings, also in DIR/cluster.env
#   deploy/ha/cluster.sh stop DIR    # stops exactly what start started there, by PID, and keeps DIR
#   deploy/ha/cluster.sh start-node DIR N   # starts node N (1-3) again, e.g. after killing it; it rejoins
#
# Needs the Debian packages patroni, etcd-server, haproxy and PostgreSQL's
# server binaries (PG_BIN, default /usr/lib/postgresql/15/bin). As root,
# everything runs as the postgres system user (PostgreSQL refuses root).
# Failover timing comes from TTL, LOOP_WAIT, RETRY_TIMEOUT (seconds) and
# CHECK_INTERVAL (HAProxy's, e.g. 1s); see docs/guides/high-availability.md.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
TTL=${TTL:-10}
LOOP_WAIT=${LOOP_WAIT:-2}
RETRY_TIMEOUT=${RETRY_TIMEOUT:-4}
CHECK_INTERVAL=${CHECK_INTERVAL:-1s}
START_TIMEOUT=${START_TIMEOUT:-90}

die() {
  printf 'cluster.sh: %s\n' "$*" >&2
  exit 1
}

usage() { die "usage: $0 start|stop DIR, or $0 start-node DIR N"; }

find_tool() {
  for candidate in "$@"; do
    if [ -x "$candidate" ]; then
      echo "$candidate"
      return
    fi
    if command -v "$candidate" >/dev/null 2>&1; then
      command -v "$candidate"
      return
    fi
  done
  return 1
}

# Runs a command in the background as the cluster's user, in its own session
# (so kill -9 of a node's process group takes its PostgreSQL with it), and
# records its PID in DIR/NAME.pid. setpriv execs, so the PID is the program's.
# It runs in DIR: the caller's folder may be closed to the postgres user, and
# Patroni's helper processes fail to start in a folder they cannot enter.
launch() {
  local name=$1
  shift
  if [ "$(id -u)" -eq 0 ]; then
    (cd "$DIR" && exec setsid setpriv --reuid=postgres --regid=postgres --init-groups "$@") >>"$DIR/$name.log" 2>&1 </dev/null &
  else
    (cd "$DIR" && exec setsid "$@") >>"$DIR/$name.log" 2>&1 </dev/null &
  fi
  echo $! >"$DIR/$name.pid"
}

free_ports() {
  /usr/bin/python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

wait_for() {
  local what=$1
  shift
  local deadline=$((SECONDS + START_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "$what did not come up within ${START_TIMEOUT}s; see the logs in $DIR"
    sleep 0.3
  done
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# True once node2 or node3 is the synchronous standby (GET /sync answers 200 there only).
any_sync() {
  curl -fsS -o /dev/null "http://127.0.0.1:$NODE2_REST_PORT/sync" || curl -fsS -o /dev/null "http://127.0.0.1:$NODE3_REST_PORT/sync"
}

# DIR/cluster.env, for `. DIR/cluster.env`: every value in single quotes, so
# that sourcing it sets PATRONICTL to the whole command, -c FILE included,
# instead of running "-c" as a command.
quoted() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
write_env() {
  {
    echo "PLANTS_HA_URL=$(quoted "postgres://postgres@127.0.0.1:$HAPROXY_PORT/postgres")"
    echo "HAPROXY_PORT=$(quoted "$HAPROXY_PORT")"
    echo "ETCD_URL=$(quoted "http://127.0.0.1:$ETCD_PORT")"
    for i in 1 2 3; do
      local pg_port=NODE${i}_PG_PORT rest_port=NODE${i}_REST_PORT
      echo "NODE${i}_PG_PORT=$(quoted "${!pg_port}")"
      echo "NODE${i}_REST_PORT=$(quoted "${!rest_port}")"
    done
    echo "PATRONICTL=$(quoted "patronictl -c $DIR/node1/patroni.yml")"
  } >"$1"
}

start() {
  local patroni etcd haproxy
  patroni=$(find_tool patroni) || die "patroni is not installed (Debian package patroni)"
  etcd=$(find_tool etcd) || die "etcd is not installed (Debian package etcd-server)"
  haproxy=$(find_tool haproxy /usr/sbin/haproxy) || die "haproxy is not installed (Debian package haproxy)"
  [ -x "$PG_BIN/postgres" ] || die "no PostgreSQL server in $PG_BIN (set PG_BIN)"
  command -v envsubst >/dev/null || die "envsubst is not installed (Debian package gettext-base)"
  [ ! -e "$DIR" ] || die "$DIR exists already; give a new directory"
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)

  local ports
  read -r -a ports <<<"$(free_ports 9)"
  export ETCD_PORT=${ports[0]} ETCD_PEER_PORT=${ports[1]} HAPROXY_PORT=${ports[2]}
  export NODE1_PG_PORT=${ports[3]} NODE2_PG_PORT=${ports[4]} NODE3_PG_PORT=${ports[5]}
  export NODE1_REST_PORT=${ports[6]} NODE2_REST_PORT=${ports[7]} NODE3_REST_PORT=${ports[8]}
  export NODE1_HOST=127.0.0.1 NODE2_HOST=127.0.0.1 NODE3_HOST=127.0.0.1 HAPROXY_BIND=127.0.0.1
  export ETCD_HOSTS=127.0.0.1:$ETCD_PORT PG_BIN TTL LOOP_WAIT RETRY_TIMEOUT CHECK_INTERVAL
  export CLIENT_NET=127.0.0.1/32 AUTH_METHOD=trust NODE_HOST=127.0.0.1

  for i in 1 2 3; do mkdir -p "$DIR/node$i"; done
  if [ "$(id -u)" -eq 0 ]; then
    chown -R postgres:postgres "$DIR"
    setpriv --reuid=postgres --regid=postgres --init-groups test -w "$DIR" ||
      die "the postgres user cannot write to $DIR (is a parent directory private to root?)"
  fi
  chmod 700 "$DIR"
  # A start that fails stops what it started, so nothing is left running.
  trap 'stop >/dev/null 2>&1' EXIT

  launch etcd "$etcd" --name plant-store-etcd --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "plant-store-etcd=http://127.0.0.1:$ETCD_PEER_PORT"
  wait_for etcd curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

  for i in 1 2 3; do
    local pg_port=NODE${i}_PG_PORT rest_port=NODE${i}_REST_PORT
    NODE_NAME=node$i NODE_DIR=$DIR/node$i DATA_DIR=$DIR/node$i/data PG_PORT=${!pg_port} REST_PORT=${!rest_port} \
      envsubst <"$HERE/patroni.yml" >"$DIR/node$i/patroni.yml"
    [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$DIR/node$i/patroni.yml"
    launch "node$i" "$patroni" "$DIR/node$i/patroni.yml"
    # The first node bootstraps the cluster; the others clone it.
    [ "$i" -ne 1 ] || wait_for "the first Patroni node" curl -fsS "http://127.0.0.1:$NODE1_REST_PORT/primary"
  done

  envsubst <"$HERE/haproxy.cfg" >"$DIR/haproxy.cfg"
  [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$DIR/haproxy.cfg"
  launch haproxy "$haproxy" -db -f "$DIR/haproxy.cfg"

  for i in 2 3; do
    local rest_port=NODE${i}_REST_PORT
    wait_for "node$i as a streaming replica" curl -fsS "http://127.0.0.1:${!rest_port}/replica"
  done
  wait_for "a synchronous replica" any_sync
  wait_for "the primary through HAProxy" "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$HAPROXY_PORT" -U postgres

  write_env "$DIR/cluster.env"
  trap - EXIT
  cat "$DIR/cluster.env"
}

# TERM, then KILL after a grace period, to the process (and its process
# group: a Patroni node's PostgreSQL) recorded in each PID file.
stop_pid_file() {
  local file=$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$file"
}

# A PostgreSQL left behind by a Patroni that was killed: its postmaster.pid
# names it; checked to be a postgres serving that data directory first.
stop_postgres() {
  local data=$1 pid
  [ -f "$data/postmaster.pid" ] || return 0
  pid=$(head -1 "$data/postmaster.pid")
  if [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$PG_BIN/postgres")" ]; then
    kill -QUIT "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
}

stop() {
  [ -d "$DIR" ] || die "$DIR does not exist"
  stop_pid_file "$DIR/haproxy.pid"
  # All nodes at once: stopped one by one, the others would try to take over.
  for i in 1 2 3; do stop_pid_file "$DIR/node$i.pid" & done
  wait
  for i in 1 2 3; do stop_postgres "$DIR/node$i/data"; done
  stop_pid_file "$DIR/etcd.pid"
}

# A node that was killed: its Patroni starts again on the same configuration
# and rejoins as a replica (rewinding its PostgreSQL when it was the leader).
start_node() {
  local n=$1 patroni
  [[ $n =~ ^[123]$ ]] || usage
  [ -f "$DIR/node$n/patroni.yml" ] || die "$DIR has no node$n; start the cluster first"
  ! alive "$DIR/node$n.pid" || die "node$n is running already"
  patroni=$(find_tool patroni) || die "patroni is not installed (Debian package patroni)"
  launch "node$n" "$patroni" "$DIR/node$n/patroni.yml"
}

# Sourced (by the tests, for its functions), it runs nothing.
[[ ${BASH_SOURCE[0]} == "$0" ]] || return 0
[ $# -ge 2 ] || usage
cmd=$1
DIR=$2
case $cmd in
  start) start ;;
  stop) stop ;;
  start-node)
    [ $# -eq 3 ] || usage
    start_node "$3"
    ;;
  *) usage ;;
esac
