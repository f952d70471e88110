vcl 4.1;

# The caching edge standing in for the CDN, behind the edge's nginx
# (deploy/edge.conf.in), which answers purchases itself and hands
# everything else here, on a unix socket. deploy/stack renders this file
# into $FLASHSALE_STATE/conf/varnish.vcl, filling in the origin port; the
# cluster topology's lines take two origin hosts instead of one.
#
# Cached: static files, the public sale documents (sale, reveal, units
# left). Passed: every other /api/ request (per user, or not GET/HEAD).
# Piped: the order events stream. Refused: the operator endpoints (expiry, /metrics, /healthz,
# /readyz) and the nchan publisher.

# @SINGLE_BEGIN@
# The probe asks whether the origin answers at all: its nginx's /healthz,
# which nginx answers itself, as in the cluster topology (below), so that a
# busy origin passes it. An origin whose stores fail answers its own 503
# TRY_AGAIN (its /readyz says which store). A sick origin gets no requests
# (with one origin the edge answers 503 TRY_AGAIN at once instead of
# waiting on it). Starts healthy, so a fresh edge serves at once. (Until
# 2026-12-05 the single topology probed /readyz, a FastCGI round trip to
# the purchase handler that waits behind the purchases: a burst could
# mark the only origin sick, and a Redis outage turned every request the
# origin could still answer into the edge's 503.)
probe origin_alive {
	.url = "/healthz";
	.interval = 1s;
	.timeout = 2s;
	.window = 3;
	.threshold = 2;
	.initial = 2;
}

backend origin {
	.host = "127.0.0.1";
	.port = "@PORT_ORIGIN@";
	.connect_timeout = 1s;
	.first_byte_timeout = 20s;
	.between_bytes_timeout = 20s;
	.probe = origin_alive;
}
# @SINGLE_END@
# @CLUSTER_BEGIN@
# Two origin hosts (deploy/stack.d/cluster.sh), taken in turn. The probe asks
# whether an origin host answers at all: its nginx's /healthz, which nginx
# answers itself, so that a busy origin passes it. (Until 2026-12-05 it
# was /readyz, a FastCGI round trip to the purchase handler that waits in
# line behind the purchases: under a full-scale burst both origins missed
# its 400 ms and the edge answered 1,256 requests 503 with two origins up.
# An origin whose stores fail answers its own 503s; the edge's nginx takes
# purchases past a failing one by itself.) An origin that stops answering
# is sick after two failed probes of a window of three, a probe each
# 500 ms: a killed host refuses at once, so the edge stops sending to it
# within about a second; one that went silent within three (each probe
# waits 1 s, a loaded machine's scheduling delay, before it counts as
# failed). Until then a request that cannot reach it is retried once on
# the other (vcl_backend_error).
#
# Varnish Cache has no TLS to its backends: each backend is the edge's
# nginx on a unix socket of its own, which speaks TLS to that origin host
# with the edge's client certificate (deploy/edge.conf.in) and closes the
# connection unanswered when the host cannot be reached, so that the
# probes and the retry below see the host itself.
import directors;
import std;

probe origin_alive {
	.url = "/healthz";
	.interval = 500ms;
	.timeout = 1s;
	.window = 3;
	.threshold = 2;
	.initial = 2;
}

backend origin_a {
	.path = "@RUN@/edge-origins/a.sock";
	.host_header = "@ORIGIN_A@";
	.connect_timeout = 300ms;
	.first_byte_timeout = 20s;
	.between_bytes_timeout = 20s;
	.probe = origin_alive;
}

backend origin_b {
	.path = "@RUN@/edge-origins/b.sock";
	.host_header = "@ORIGIN_B@";
	.connect_timeout = 300ms;
	.first_byte_timeout = 20s;
	.between_bytes_timeout = 20s;
	.probe = origin_alive;
}

# The same two hosts unprobed: taken in turn while the probe finds neither
# healthy. A probe's verdict steers requests between the origins; it never
# makes the edge answer 503 by itself while an origin would answer. Both
# hosts stalled past the probe's timeout (a machine so loaded that its
# nginx took more than a second to answer /healthz: seen once in a
# full-scale rehearsal at load 90, two such probes in a row are "sick")
# answer late rather than not at all; a dead one refuses at once and the
# request is retried on the other (vcl_backend_error), then answered 503.
# cluster/probe_busy.sh stops both origins' nginx past the probe window.
backend origin_a_any {
	.path = "@RUN@/edge-origins/a.sock";
	.host_header = "@ORIGIN_A@";
	.connect_timeout = 300ms;
	.first_byte_timeout = 20s;
	.between_bytes_timeout = 20s;
}

backend origin_b_any {
	.path = "@RUN@/edge-origins/b.sock";
	.host_header = "@ORIGIN_B@";
	.connect_timeout = 300ms;
	.first_byte_timeout = 20s;
	.between_bytes_timeout = 20s;
}

sub vcl_init {
	new origins = directors.round_robin();
	origins.add_backend(origin_a);
	origins.add_backend(origin_b);
	new origins_any = directors.round_robin();
	origins_any.add_backend(origin_a_any);
	origins_any.add_backend(origin_b_any);
}

sub vcl_recv {
	if (std.healthy(origin_a) || std.healthy(origin_b)) {
		set req.backend_hint = origins.backend();
	} else {
		set req.backend_hint = origins_any.backend();
	}
}

sub vcl_backend_fetch {
	if (std.healthy(origin_a) || std.healthy(origin_b)) {
		set bereq.backend = origins.backend();
	} else {
		set bereq.backend = origins_any.backend();
	}
}

# An origin that died under a request: once more, on the next healthy one.
# Safe for a POST too (a purchase in another spelling than the one the
# edge's nginx passes itself): a shopper holds one unit per sale, and a
# repeated purchase is answered 409 with the order it already has.
sub vcl_backend_error {
	if (bereq.retries == 0) {
		return (retry);
	}
}
# @CLUSTER_END@

sub vcl_recv {
	# The edge's nginx is the first hop and Varnish's only client: it put
	# its client's address in X-Forwarded-For in place of whatever the
	# client sent, so that the origin's per-IP limit cannot be dodged by
	# forging the header. Varnish appends its own client (the socket):
	# keep the first.
	set req.http.X-Forwarded-For = regsub(req.http.X-Forwarded-For, "\s*,.*$", "");

	# nginx would decode %XX, merge slashes and resolve dot segments before
	# routing: refuse such paths here, so that the checks below see the
	# path the origin will route. No legitimate URL of ours has them.
	if (req.url !~ "^/" || req.url ~ "^[^?]*(%|//|/\.\.?(/|\?|$))") {
		return (synth(400));
	}
	if (req.url ~ "^/api/flash-sales/admin(/|\?|$)" || req.url ~ "^/pub(/|\?|$)" ||
	    req.url ~ "^/(metrics|healthz|readyz)(/|\?|$)") {
		return (synth(403));
	}

	# Server-Sent Events: pass would deliver an empty body (nchan sends
	# neither Content-Length nor chunks); pipe streams it. The origin pings
	# every 15 s so that pipe_timeout does not cut an idle stream.
	if (req.url ~ "^/api/flash-sales/orders/[^/?]+/events(\?|$)") {
		return (pipe);
	}

	if (req.method != "GET" && req.method != "HEAD") {
		return (pass);
	}
	if (req.url ~ "^/api/") {
		if (req.url ~ "^/api/flash-sales/sales/[1-9][0-9]{0,17}(/reveal|/stock|/queue)?(\?|$)") {
			# Public documents: the same for everyone, so a query string
			# or a token must not split (or bust) the cache.
			unset req.http.Authorization;
			unset req.http.Cookie;
			set req.url = regsub(req.url, "\?.*$", "");
			return (hash);
		}
		# Orders (a shopper's /sales/{id}/my-order too), the clock: per
		# shopper, never cached.
		return (pass);
	}

	# Static files.
	unset req.http.Authorization;
	unset req.http.Cookie;
	set req.url = regsub(req.url, "\?.*$", "");
	return (hash);
}

# One cache entry per URL, whatever Host the client sent.
sub vcl_hash {
	hash_data(req.url);
	return (lookup);
}

sub vcl_backend_response {
	# Errors of the origin are never cached, and a request after one goes
	# to the origin again at once (no hit-for-miss period).
	if (beresp.status >= 500) {
		set beresp.ttl = 0s;
		set beresp.grace = 0s;
		set beresp.uncacheable = true;
		return (deliver);
	}
	# The reveal document: about a second, and never stale (the default
	# grace of 10 s would hand out an old answer right after expiry). A
	# 425 before the start is cached too, so the herd waiting for the start
	# instant is coalesced instead of passed.
	if (bereq.url ~ "^/api/flash-sales/sales/[1-9][0-9]{0,17}/reveal$") {
		set beresp.ttl = 1s;
		set beresp.grace = 0s;
		return (deliver);
	}
	# The units left document follows the origin's Cache-Control (max-age=1)
	# with a grace of one second: right after it expires the polling
	# crowd gets the copy just expired while one background fetch
	# refreshes it, so no shopper waits on the origin and the origin sees
	# about one request per second; a figure is at most about 2 s old.
	# The waiting room's status document too (docs/QUEUE.md): the waiting
	# pages poll it, so the crowd costs the origin one request per second
	# and edge; its joins and passes are POSTs, passed above.
	if (bereq.url ~ "^/api/flash-sales/sales/[1-9][0-9]{0,17}/(stock|queue)$") {
		set beresp.grace = 1s;
		set beresp.keep = 0s;
		return (deliver);
	}
	# The sale document follows the origin's Cache-Control; its serverTime
	# must not go stale either.
	if (bereq.url ~ "^/api/flash-sales/sales/[1-9][0-9]{0,17}$") {
		set beresp.grace = 0s;
	}
}

sub vcl_deliver {
	if (obj.hits > 0) {
		set resp.http.X-Cache = "HIT";
	} else {
		set resp.http.X-Cache = "MISS";
	}
}

# The edge's own refusals, in the API's JSON shape.
sub vcl_synth {
	set resp.http.Content-Type = "application/json; charset=utf-8";
	set resp.http.Cache-Control = "no-store";
	if (resp.status == 400) {
		set resp.body = """{"error":"BAD_REQUEST","message":"The request is malformed.","requestId":"edge-""" + req.xid + """"}""";
	} elsif (resp.status == 413) {
		set resp.body = """{"error":"PAYLOAD_TOO_LARGE","message":"The request body is too large.","requestId":"edge-""" + req.xid + """"}""";
	} elsif (resp.status == 403) {
		set resp.body = """{"error":"FORBIDDEN","message":"Not allowed.","requestId":"edge-""" + req.xid + """"}""";
	} else {
		set resp.body = """{"error":"ERROR","message":"The edge could not answer.","requestId":"edge-""" + req.xid + """"}""";
	}
	return (deliver);
}

# The origin is down or too slow: ask the client to retry.
sub vcl_backend_error {
	set beresp.status = 503;
	set beresp.http.Content-Type = "application/json; charset=utf-8";
	set beresp.http.Cache-Control = "no-store";
	set beresp.http.Retry-After = "1";
	set beresp.body = """{"error":"TRY_AGAIN","message":"The service is busy; retry in a second.","requestId":"edge-""" + bereq.xid + """"}""";
	set beresp.ttl = 0s;
	set beresp.grace = 0s;
	set beresp.uncacheable = true;
	return (deliver);
}
