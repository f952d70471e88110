vcl 4.1;

# The caching edge standing in for the CDN. deploy/stack renders this file
# into $FLASHSALE_STATE/conf/varnish.vcl, filling in the origin port.
#
# Cached: static files and the two public sale documents. Passed: every
# other /api/ request (per user, or not GET/HEAD). Piped: the order events
# stream. Refused: the operator endpoints and the nchan publisher.

backend origin {
	.host = "127.0.0.1";
	.port = "@PORT_ORIGIN@";
	.connect_timeout = 1s;
	.first_byte_timeout = 20s;
	.between_bytes_timeout = 20s;
}

sub vcl_recv {
	# The edge is the first hop: its client's address replaces whatever
	# X-Forwarded-For the client sent, so the origin's per-IP limit cannot
	# be dodged by forging the header.
	set req.http.X-Forwarded-For = client.ip;

	# nginx would decode %XX, merge slashes and resolve dot segments before
	# routing: refuse such paths here, so that the checks below see the
	# path the origin will route. No legitimate URL of ours has them.
	if (req.url !~ "^/" || req.url ~ "^[^?]*(%|//|/\.\.?(/|\?|$))") {
		return (synth(400));
	}
	if (req.url ~ "^/api/flash-sales/admin(/|\?|$)" || req.url ~ "^/pub(/|\?|$)") {
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
		if (req.url ~ "^/api/flash-sales/sales/[1-9][0-9]{0,17}(/reveal)?(\?|$)") {
			# Public documents: the same for everyone, so a query string
			# or a token must not split (or bust) the cache.
			unset req.http.Authorization;
			unset req.http.Cookie;
			set req.url = regsub(req.url, "\?.*$", "");
			return (hash);
		}
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
		set resp.body = """{"error":"BAD_REQUEST","message":"The request is malformed."}""";
	} elsif (resp.status == 403) {
		set resp.body = """{"error":"FORBIDDEN","message":"Not allowed."}""";
	} else {
		set resp.body = """{"error":"ERROR","message":"The edge could not answer."}""";
	}
	return (deliver);
}

# The origin is down or too slow: ask the client to retry.
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
