#!/usr/bin/env bash
# Brings up what the test suite talks to, on a fresh Debian machine or on one that has it:
# RabbitMQ on 127.0.0.1:5672 (guest/guest) with the consistent-hash exchange plugin, Redis on
# 127.0.0.1:6379 (the shared state of several instances; keeps nothing on disk), and OpenSSH's
# sshd for the SFTP tests (installed only: each SFTP test file starts its own private server,
# test/support/sshd.ts). Installs from Debian's packages when missing. Debian's chromium, for the test that opens /docs in a real browser
# (test/ops/docs.test.ts drives /usr/bin/chromium with playwright-core; no browser download), and
# promtool from Debian's prometheus package (test/ops/alert-rules.test.ts tests ops/alerts.yaml).
# PostgreSQL on 127.0.0.1:5432 (trust auth) for the history store's tests. Debian's nginx (installed
# only) for the portal behind a reverse proxy.
# Idempotent and quiet when everything is already there.
set -euo pipefail

log() { printf 'ensure-services: %s\n' "$*" >&2; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq >&2; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >&2
}

ensure_rabbitmq() {
  if port_open 5672; then return 0; fi
  if ! command -v rabbitmq-server >/dev/null 2>&1 && [ ! -x /usr/sbin/rabbitmq-server ]; then
    log "installing rabbitmq-server from Debian's packages"
    apt_install rabbitmq-server
  fi
  log "starting RabbitMQ"
  (cd / && as_root rabbitmq-server -detached) >&2
  as_root rabbitmqctl wait --timeout 90 "/var/lib/rabbitmq/mnesia/rabbit@$(hostname -s).pid" >/dev/null 2>&1 || true
  for _ in $(seq 1 90); do port_open 5672 && { log "RabbitMQ is up"; return 0; }; sleep 1; done
  log "RabbitMQ did not open 127.0.0.1:5672 within 90 s"; exit 1
}

# Sharded queues (broker.queues[].shards) are a consistent-hash exchange: the plugin ships with
# RabbitMQ but is off by default. Enabling it is online and idempotent (no broker restart).
ensure_rabbitmq_plugins() {
  # The enabled-plugins file first: rabbitmq-plugins boots an Erlang VM (~20 s on a busy machine).
  if grep -qs rabbitmq_consistent_hash_exchange /etc/rabbitmq/enabled_plugins; then return 0; fi
  log "enabling the rabbitmq_consistent_hash_exchange plugin"
  as_root rabbitmq-plugins enable --quiet rabbitmq_consistent_hash_exchange >/dev/null
}

ensure_redis() {
  if port_open 6379; then return 0; fi
  if ! command -v redis-server >/dev/null 2>&1; then
    log "installing redis-server from Debian's packages"
    apt_install redis-server
    # The package's own init script may have started it already.
    port_open 6379 && { log "Redis is up"; return 0; }
  fi
  log "starting Redis on 127.0.0.1:6379"
  # Loopback only, nothing kept on disk: the tests need a server, not a database.
  (cd / && as_root redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no) >&2
  for _ in $(seq 1 30); do port_open 6379 && { log "Redis is up"; return 0; }; sleep 1; done
  log "Redis did not open 127.0.0.1:6379 within 30 s"; exit 1
}

ensure_sshd() {
  if [ ! -x /usr/sbin/sshd ]; then
    log "installing openssh-server from Debian's packages"
    apt_install openssh-server
  fi
  # sshd refuses to start without its privilege-separation directory (not kept across reboots).
  as_root mkdir -p /run/sshd
}

# promtool (Debian's prometheus package): test/ops/alert-rules.test.ts runs `promtool test rules` on
# ops/alerts.test.yaml. Installing the package also starts a Prometheus on :9090 under systemd
# hosts; nothing in the tests uses it.
ensure_promtool() {
  if command -v promtool >/dev/null 2>&1; then return 0; fi
  log "installing prometheus (for promtool) from Debian's packages"
  apt_install prometheus
}

# Debian's nginx, installed only: test/portal/behind-proxy.test.ts runs a private one (its own
# configuration, prefix folder and port) as the reverse proxy in front of the portal. The package
# may start the machine's own nginx on :80 under an init system; nothing in the tests uses it.
ensure_nginx() {
  if [ -x /usr/sbin/nginx ]; then return 0; fi
  log "installing nginx from Debian's packages"
  apt_install nginx
}

ensure_chromium() {
  if [ -x /usr/bin/chromium ]; then return 0; fi
  log "installing chromium from Debian's packages"
  apt_install chromium
}

# PostgreSQL on 127.0.0.1:5432 with trust auth for user postgres: the history store's PostgreSQL
# adapter (test/history/postgres.test.ts creates a database of its own per run and drops it).
# On a fresh install, trust is set for loopback only (tests, never a deployment's setting).
ensure_postgres() {
  if port_open 5432; then return 0; fi
  if ! command -v pg_lsclusters >/dev/null 2>&1; then
    log "installing postgresql from Debian's packages"
    apt_install postgresql
  fi
  local version
  version=$(pg_lsclusters -h | awk 'NR==1 {print $1}')
  if [ -z "$version" ]; then log "no PostgreSQL cluster found (pg_lsclusters)"; exit 1; fi
  local hba="/etc/postgresql/$version/main/pg_hba.conf"
  if ! grep -qE '^host\s+all\s+all\s+127\.0\.0\.1/32\s+trust' "$hba"; then
    log "PostgreSQL: trust auth for 127.0.0.1 (tests)"
    as_root sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
  fi
  log "starting PostgreSQL $version"
  as_root pg_ctlcluster "$version" main start >&2 || true
  for _ in $(seq 1 60); do port_open 5432 && { log "PostgreSQL is up"; return 0; }; sleep 1; done
  log "PostgreSQL did not open 127.0.0.1:5432 within 60 s"; exit 1
}

# What makes every broker test fail at once, checked before the run rather than found in 100
# timeouts: too little free disk (RabbitMQ blocks every publisher under its disk alarm, quorum
# queues write each message to disk) or a resource alarm the broker already raised.
MIN_FREE_MB=2048
check_machine() {
  local dir free
  for dir in "${TMPDIR:-/tmp}" /var/lib/rabbitmq; do
    [ -d "$dir" ] || continue
    free=$(df -Pm "$dir" | awk 'NR==2 {print $4}')
    if [ "$free" -lt "$MIN_FREE_MB" ]; then
      log "only ${free} MB free under $dir (the suite needs ${MIN_FREE_MB} MB: quorum queues, test files, a RabbitMQ cluster)"
      exit 1
    fi
  done
  local alarms
  alarms=$(as_root rabbitmq-diagnostics -q alarms 2>&1 || true)
  if ! grep -q 'no alarms' <<<"$alarms"; then
    log "RabbitMQ on 5672 reports a resource alarm (publishers are blocked): $alarms"
    exit 1
  fi
  log "machine: load $(cut -d' ' -f1-3 /proc/loadavg), ${free} MB free, RabbitMQ without alarms"
}

ensure_rabbitmq
ensure_rabbitmq_plugins
check_machine
ensure_redis
ensure_sshd
ensure_chromium
ensure_nginx
ensure_promtool
ensure_postgres
