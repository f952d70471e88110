vcl 4.1;

# The caching edge in front of the origins: an example for production.
#
# The local stack renders its own from deploy/varnish.vcl; this file says
# what each rule is for and what to change (lines marked CHANGE). It sits
# behind the edge's nginx (deploy/production/nginx-edge.conf), which
# answers purchases itself (an item's sold-out answer kept a second or
# two, every other purchase passed to an origin) and hands everything
# else here, on a unix socket only that nginx reaches: run varnishd with
# `-a /run/varnish/edge.sock,user=varnish,group=www-data,mode=660`
# (CHANGE the group to nginx's user's). A commercial CDN needs the same
# five rules: cache the page and the sale documents for about a second
# (without grace, but the units left with a second of it), keep an item's
# sold-out answer to a purchase for at most a second, pass every
# other API request, stream the order events, refuse the operator paths.
#
# Check it with `varnishd -C -f /etc/varnish/default.vcl >/dev/null`.

import directors;
import std;

# CHANGE: one backend per origin host (nginx, deploy/production/nginx.conf).
# Varnish Cache speaks no TLS to its backends: each backend is the edge's
# nginx on a unix socket of its own, which speaks TLS to that origin host
# with the edge's client certificate (nginx-edge.conf) and closes the
# connection unanswered when the host cannot be reached, so that the probe
# and the retry see the host itself.
# The probe takes an origin out of rotation when its host does not answer:
# GET /healthz, which its nginx answers itself, so that a busy origin
# passes it (a /readyz probe waits behind the purchases in the purchase
# handler's line and took busy origins out under a burst; an origin whose
# stores fail answers its own 503s, /readyz names the store).
probe origin_alive {
	.url = "/healthz";
	.interval = 1s;
	.timeout = 1s;
	.window = 5;
	.threshold = 3;
}
backend origin1 {
	.path = "/run/flashsale-edge/origin1.sock";
	.host_header = "origin1.flashsale.internal";
	.probe = origin_alive;
	.connect_timeout = 1s;
	# A reveal is held by the origin until the start instant; the first
	# byte may take that long.
	.first_byte_timeout = 20s;
	.between_bytes_timeout = 20s;
}
backend origin2 {
	.path = "/run/flashsale-edge/origin2.sock";
	.host_header = "origin2.flashsale.internal";
	.probe = origin_alive;
	.connect_timeout = 1s;
	.first_byte_timeout = 20s;
	.between_bytes_timeout = 20s;
}
# CHANGE: the same hosts without the probe, taken while it finds none
# healthy. The probe's verdict steers requests between the origins; it
# never makes the edge answer 503 by itself while an origin would answer
# (probes that time out on hosts too loaded to answer /healthz in time
# would otherwise turn every request into the edge's 503); a dead host
# refuses at once and the client is told to retry (vcl_backend_error).
# The same sockets as above: the edge's nginx speaks TLS to each host.
backend origin1_any {
	.path = "/run/flashsale-edge/origin1.sock";
	.host_header = "origin1.flashsale.internal";
	.connect_timeout = 1s;
	.first_byte_timeout = 20s;
	.between_bytes_timeout = 20s;
}
backend origin2_any {
	.path = "/run/flashsale-edge/origin2.sock";
	.host_header = "origin2.flashsale.internal";
	.connect_timeout = 1s;
	.first_byte_timeout = 20s;
	.between_bytes_timeout = 20s;
}

sub vcl_init {
	new origins = directors.round_robin();
	origins.add_backend(origin1);
	origins.add_backend(origin2);
	new origins_any = directors.round_robin();
	origins_any.add_backend(origin1_any);
	origins_any.add_backend(origin2_any);
}

sub vcl_recv {
	if (std.healthy(origin1) || std.healthy(origin2)) {
		set req.backend_hint = origins.backend();
	} else {
		set req.backend_hint = origins_any.backend();
	}

	# The edge's nginx is the first hop and Varnish's only client: it put
	# its client's address in X-Forwarded-For in place of whatever the
	# client sent, so that the origin's per-IP limit cannot be dodged by
	# forging the header. Varnish appends its own client (the socket):
	# keep the first.
	set req.http.X-Forwarded-For = regsub(req.http.X-Forwarded-For, "\s*,.*$", "");

	# nginx decodes %XX, merges slashes and resolves dot segments before it
	# routes: refuse such paths, so that the rules below see the path the
	# origin will route. No URL of the shop has them.
	if (req.url !~ "^/" || req.url ~ "^[^?]*(%|//|/\.\.?(/|\?|$))") {
		return (synth(400));
	}
	# Operator endpoints and the nchan publisher never pass the edge.
	if (req.url ~ "^/api/flash-sales/admin(/|\?|$)" || req.url ~ "^/pub(/|\?|$)" ||
	    req.url ~ "^/(metrics|healthz|readyz)(/|\?|$)") {
		return (synth(403));
	}

	# Server-Sent Events: pass would deliver an empty body (nchan sends
	# neither Content-Length nor chunks); pipe streams it.
	if (req.url ~ "^/api/flash-sales/orders/[^/?]+/events(\?|$)") {
		return (pipe);
	}

	if (req.method != "GET" && req.method != "HEAD") {
		return (pass);
	}
	if (req.url ~ "^/api/") {
		if (req.url ~ "^/api/flash-sales/sales/[1-9][0-9]{0,17}(/reveal|/stock|/queue)?(\?|$)") {
			# Public documents, the same for everyone: a query string, a
			# token or a cookie must not split (or bust) the cache.
			unset req.http.Authorization;
			unset req.http.Cookie;
			set req.url = regsub(req.url, "\?.*$", "");
			return (hash);
		}
		# Orders (a shopper's /sales/{id}/my-order too), purchases in
		# another spelling than the edge's nginx passes itself, the clock:
		# per shopper, never cached.
		return (pass);
	}

	# The page and its files.
	unset req.http.Authorization;
	unset req.http.Cookie;
	set req.url = regsub(req.url, "\?.*$", "");
	return (hash);
}

# One cache entry per URL, whatever Host the client sent. CHANGE: add
# hash_data(req.http.host) if this edge serves other sites too.
sub vcl_hash {
	hash_data(req.url);
	return (lookup);
}

sub vcl_backend_response {
	# Errors of the origin are never cached, and the next request goes to
	# the origin again at once (no hit-for-miss period).
	if (beresp.status >= 500) {
		set beresp.ttl = 0s;
		set beresp.grace = 0s;
		set beresp.uncacheable = true;
		return (deliver);
	}
	# The reveal document: one second, never stale (the default grace of
	# 10 s would hand out an old answer right after expiry). A 425 before
	# the start is cached too, so the herd waiting for the start instant
	# is coalesced into one origin request per second.
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
	# The sale document follows the origin's Cache-Control (max-age=1); its
	# serverTime must not go stale either.
	if (bereq.url ~ "^/api/flash-sales/sales/[1-9][0-9]{0,17}$") {
		set beresp.grace = 0s;
	}
}

# Pipe (the event streams) lasts as long as the stream; the origin pings
# every 15 s, below Varnish's pipe_timeout (60 s, a varnishd parameter).

# The edge's own refusals, in the API's JSON shape.
sub vcl_synth {
	set resp.http.Content-Type = "application/json; charset=utf-8";
	set resp.http.Cache-Control = "no-store";
	if (resp.status == 400) {
		set resp.body = """{"error":"BAD_REQUEST","message":"The request is malformed."}""";
	} elsif (resp.status == 413) {
		set resp.body = """{"error":"PAYLOAD_TOO_LARGE","message":"The request body is too large."}""";
	} elsif (resp.status == 403) {
		set resp.body = """{"error":"FORBIDDEN","message":"Not allowed."}""";
	} else {
		set resp.body = """{"error":"ERROR","message":"The edge could not answer."}""";
	}
	return (deliver);
}

# Every origin is down or too slow: ask the client to retry.
sub vcl_backend_error {
	set beresp.status = 503;
	set beresp.http.Content-Type = "application/json; charset=utf-8";
	set beresp.http.Cache-Control = "no-store";
	set beresp.http.Retry-After = "1";
	set beresp.body = """{"error":"TRY_AGAIN","message":"The service is busy; retry in a second."}""";
	set beresp.ttl = 0s;
	set beresp.grace = 0s;
	set beresp.uncacheable = true;
	return (deliver);
}
