#!/usr/bin/env bash
# Installs everything faultline needs: Debian packages (when root) and a
# virtualenv in .venv with faultline and its test tools. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: the headless browser the report tests render report.html in.
# redis-server: the contrib/redis plugin's system under test (Redis 7 and Sentinel).
# nats-server: the contrib/nats plugin's system under test (NATS JetStream).
# libfaketime, stress-ng: the clock and stress faults (docs/faults.md).
# iptables, libnetfilter-queue-dev (+ gcc, python3-dev to build netfilterqueue):
# the packet queue of the network quality faults (nemesis.netshape); iputils-ping:
# bench/netfaults.py.
# mariadb-server, galera-4, rsync: the contrib/galera plugin's system under test
# (MariaDB Galera Cluster; rsync is its state transfer). Outside a container
# (no policy-rc.d) Debian also starts its own server, on loopback only; the
# plugin starts its own per node and never uses that one.
debs=(openjdk-17-jre-headless fuse3 libfuse2 nftables iproute2 procps etcd-server etcd-client
      chromium redis-server stress-ng nats-server libfaketime iptables libnetfilter-queue-dev
      gcc python3-dev iputils-ping mariadb-server galera-4 rsync)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    missing=()
    for d in "${debs[@]}"; do
        dpkg -s "$d" >/dev/null 2>&1 || missing+=("$d")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "setup: installing Debian packages: ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
else
    echo "setup: not root, skipping Debian packages (${debs[*]}); namespace tests will skip" >&2
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$python" -m venv .venv
fi
if ! .venv/bin/python -c 'import harness, pyspark, pytest, xdist' >/dev/null 2>&1 \
   || [ pyproject.toml -nt .venv/.installed ]; then
    echo "setup: installing Python packages into .venv"
    .venv/bin/pip install -q --disable-pip-version-check -e '.[test]'
    touch .venv/.installed
fi
# The contrib system plugins, as a user installs theirs, so the plugin contract
# test (tests/systems/test_plugin_contract.py) holds each of them; their client
# libraries are among faultline's test extras above.
for plugin in contrib/*/pyproject.toml; do
    dir=$(dirname "$plugin")
    pkg=faultline_$(basename "$dir")
    if ! .venv/bin/python -c "import $pkg" >/dev/null 2>&1; then
        .venv/bin/pip install -q --disable-pip-version-check --no-deps -e "$dir"
    fi
done
# Bytecode for our own packages, as pip writes it for an installed package (an
# editable install leaves it to the first import, which a shell with
# PYTHONDONTWRITEBYTECODE set never writes): otherwise every command compiles
# the modules it imports again, ~0.03 s of `faultline check-elle` on Elle's
# huge-scc. Python checks each cache against its source, so a stale one is
# only not used.
.venv/bin/python -m compileall -q checkers harness nodes nemesis workloads faultline >/dev/null
