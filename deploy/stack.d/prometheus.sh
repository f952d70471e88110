# shellcheck shell=sh
# deploy/stack's part Prometheus (optional): start, ready, stop, status
# (sourced by deploy/stack).

# Debian's prometheus scrapes GET /metrics of the origins every 5 s and
# evaluates deploy/prometheus/alerts.yml; its data lives in $STATE/prometheus.
start_prometheus() {
	if [ -n "$(part_pids prometheus)" ]; then
		say prometheus "already running (pid $(cat "$RUN/prometheus.pid"))"
		return 0
	fi
	command -v prometheus >/dev/null || die "prometheus is not installed: run deploy/install-deps"
	mkdir -p "$STATE/prometheus"
	cp "$here/prometheus/alerts.yml" "$CONF/prometheus-alerts.yml"
	targets=$(for t in $PROMETHEUS_TARGETS; do printf "'%s', " "$t"; done)
	cat >"$CONF/prometheus.yml" <<EOF
global:
  scrape_interval: 5s
  scrape_timeout: 4s
  evaluation_interval: 5s
rule_files:
  - $CONF/prometheus-alerts.yml
scrape_configs:
  - job_name: flashsale
    metrics_path: /metrics
    static_configs:
      - targets: [${targets%, }]
EOF
	promtool check config "$CONF/prometheus.yml" >>"$LOG/prometheus.log" 2>&1 ||
		die "prometheus configuration $CONF/prometheus.yml is invalid; see $LOG/prometheus.log"
	spawn "$RUN/prometheus.pid" "$LOG/prometheus.log" prometheus \
		--config.file="$CONF/prometheus.yml" --storage.tsdb.path="$STATE/prometheus" \
		--storage.tsdb.retention.time=7d \
		--web.listen-address="127.0.0.1:$PORT_PROMETHEUS"
	wait_for 60 ready_prometheus || die "prometheus is not ready; see $LOG/prometheus.log"
	say prometheus "up (pid $(cat "$RUN/prometheus.pid"), http://127.0.0.1:$PORT_PROMETHEUS/, scraping $PROMETHEUS_TARGETS)"
}

ready_prometheus() {
	[ -n "$(part_pids prometheus)" ] &&
		[ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 "http://127.0.0.1:$PORT_PROMETHEUS/-/ready")" = 200 ]
}

stop_prometheus() {
	stop_pidfile prometheus "$RUN/prometheus.pid" 20
}

# Reported only once it was started.
status_prometheus() {
	if [ ! -f "$RUN/prometheus.pid" ]; then
		return 0
	fi
	status_pidfile prometheus ready_prometheus
}
