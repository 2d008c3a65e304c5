#!/usr/bin/env bash
# Starts a PostgreSQL server on 127.0.0.1:55432 for the ledger tests (installing Debian's
# postgresql package if missing) and prints its URL. Idempotent: a running server is reused.
set -euo pipefail
PORT=${TRIMGATE_TEST_PG_PORT:-55432}
if ! command -v pg_createcluster >/dev/null; then
  echo "[postgres] installing postgresql (apt)" >&2
  sudo_=""; [[ $(id -u) -ne 0 ]] && sudo_="sudo"
  $sudo_ apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq postgresql >&2
fi
VERSION=$(ls /usr/lib/postgresql | sort -V | tail -1)
if ! pg_lsclusters -h | awk '{print $2}' | grep -qx trimgate_test; then
  pg_createcluster "$VERSION" trimgate_test --port "$PORT" -- --auth-local=peer --auth-host=scram-sha-256 >&2
fi
if ! pg_lsclusters -h | awk '$2=="trimgate_test" {print $4}' | grep -qx online; then
  pg_ctlcluster "$VERSION" trimgate_test start >&2
fi
as_pg() { if [[ $(id -u) -eq 0 ]]; then su postgres -c "$1"; else sudo -u postgres sh -c "$1"; fi; }
as_pg "psql -q -p $PORT -tAc \"SELECT 1 FROM pg_roles WHERE rolname='trimgate'\" | grep -q 1 || psql -q -p $PORT -c \"CREATE ROLE trimgate LOGIN CREATEDB PASSWORD 'trimgate-test'\"" >&2
as_pg "psql -q -p $PORT -tAc \"SELECT 1 FROM pg_database WHERE datname='trimgate'\" | grep -q 1 || psql -q -p $PORT -c \"CREATE DATABASE trimgate OWNER trimgate\"" >&2
# Each test run makes its own tg_* databases; the previous run's go now.
for db in $(as_pg "psql -p $PORT -tAc \"SELECT datname FROM pg_database WHERE datname LIKE 'tg\\_%'\""); do
  as_pg "psql -q -p $PORT -c 'DROP DATABASE $db'" >&2
done
echo "postgres://trimgate:trimgate-test@127.0.0.1:$PORT/trimgate"
