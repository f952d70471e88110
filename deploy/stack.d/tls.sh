# shellcheck shell=sh
# The stack's certificate authority and the certificates it signs (sourced
# by deploy/stack; POSIX sh, functions only, openssl's command line).
#
# Like the stack's other secrets, the authority is made once, at random, in
# a directory only root may enter (0700, keys 0600), and nothing here prints
# a key: openssl reads and writes them as files. The parts that speak TLS
# (the Kafka brokers; PostgreSQL) each get a certificate signed by it, with
# the names their clients check (subjectAltName); the clients trust the
# authority's certificate (ca.crt) and nothing else.
#
#   tls_ca DIR                  DIR/ca.key, DIR/ca.crt (made once)
#   tls_keys_dir DIR            DIR, root's alone (0700), for tls_cert
#   tls_cert CADIR DIR NAME SAN [OWNER]
#                               DIR/NAME.key (0600) and DIR/NAME.crt signed
#                               by CADIR's authority for SAN
#                               ("IP:127.0.0.1,DNS:localhost"), made again
#                               when SAN changed, the authority changed or
#                               it ends within 30 days; OWNER (user:group)
#                               then owns both (PostgreSQL runs as
#                               postgres: give it a DIR it may enter, not
#                               CADIR, which is root's alone)
#
# Each returns non-zero, with openssl's complaint on stderr, when openssl
# fails; the caller dies with its own words.

TLS_CA_DAYS=3650
TLS_CERT_DAYS=397
# A certificate this close to its end is made again at the next start.
TLS_RENEW_SECONDS=$((30 * 86400))

tls_ca() {
	(umask 077 && mkdir -p "$1") || return 1
	chmod 700 "$1"
	if [ -s "$1/ca.key" ] && [ -s "$1/ca.crt" ] &&
		openssl x509 -noout -checkend "$TLS_RENEW_SECONDS" -in "$1/ca.crt" >/dev/null 2>&1; then
		return 0
	fi
	# The subject carries a random serial of its own: two stacks' authorities
	# (two state directories) never look alike.
	tls_ca_id=$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
	(
		umask 077
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1/ca.key.new" 2>/dev/null &&
			openssl req -x509 -new -key "$1/ca.key.new" -sha256 -days "$TLS_CA_DAYS" \
				-subj "/O=flashsale/CN=flashsale stack CA $tls_ca_id" \
				-addext basicConstraints=critical,CA:TRUE,pathlen:0 \
				-addext keyUsage=critical,keyCertSign,cRLSign \
				-out "$1/ca.crt.new" &&
			mv "$1/ca.key.new" "$1/ca.key" && mv "$1/ca.crt.new" "$1/ca.crt"
	) || { rm -f "$1/ca.key.new" "$1/ca.crt.new"; return 1; }
	chmod 600 "$1/ca.key"
	chmod 644 "$1/ca.crt"
}

tls_keys_dir() {
	(umask 077 && mkdir -p "$1") && chmod 700 "$1"
}

# True when DIR/NAME.crt (tls_cert CADIR DIR NAME SAN) is signed by
# CADIR's authority, names SAN, and lasts beyond the renewal margin.
tls_cert_current() {
	[ -s "$2/$3.key" ] && [ -s "$2/$3.crt" ] && [ "$(cat "$2/$3.san" 2>/dev/null)" = "$4" ] &&
		openssl verify -CAfile "$1/ca.crt" "$2/$3.crt" >/dev/null 2>&1 &&
		openssl x509 -noout -checkend "$TLS_RENEW_SECONDS" -in "$2/$3.crt" >/dev/null 2>&1
}

tls_cert() {
	case $3 in
	'' | *[!A-Za-z0-9._-]*) printf 'tls_cert: bad certificate name %s\n' "$3" >&2 && return 1 ;;
	esac
	if ! tls_cert_current "$1" "$2" "$3" "$4"; then
		(
			umask 077
			openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$2/$3.key.new" 2>/dev/null &&
				openssl req -new -key "$2/$3.key.new" -subj "/O=flashsale/CN=$3" -out "$2/$3.csr" &&
				printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=%s\n' \
					"$4" >"$2/$3.ext" &&
				openssl x509 -req -in "$2/$3.csr" -CA "$1/ca.crt" -CAkey "$1/ca.key" \
					-set_serial "0x$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')" \
					-days "$TLS_CERT_DAYS" -sha256 -extfile "$2/$3.ext" -out "$2/$3.crt.new" 2>/dev/null &&
				mv "$2/$3.key.new" "$2/$3.key" && mv "$2/$3.crt.new" "$2/$3.crt" &&
				printf '%s\n' "$4" >"$2/$3.san"
		)
		tls_status=$?
		rm -f "$2/$3.key.new" "$2/$3.crt.new" "$2/$3.csr" "$2/$3.ext"
		[ "$tls_status" = 0 ] || return 1
	fi
	chmod 600 "$2/$3.key"
	chmod 644 "$2/$3.crt" "$2/$3.san"
	if [ -n "${5:-}" ]; then
		chown "$5" "$2/$3.key" "$2/$3.crt" || return 1
	fi
}
