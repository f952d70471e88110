# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Kafka lets in only who it knows, over TLS, and each only to its job
# (issue 33): every listener (the clients', the controllers') is SASL_SSL,
# nothing answers PLAINTEXT; a client with no credentials or the wrong
# password is refused; the consumer's principal may not write an order,
# the purchase handlers' may not read them, the dead-letter replayer's may
# only read dead letters and write orders; a client that does not trust
# the stack's authority does not trust the broker; each program runs as
# its own principal and no log holds a Kafka password.

secrets=$FLASHSALE_STATE/secrets
client=127.0.0.1:$((FLASHSALE_PORT_BASE + 4))
controller=127.0.0.1:$((FLASHSALE_PORT_BASE + 5))
topic=$FLASHSALE_KAFKA_TOPIC

# refused NAME TEXT COMMAND...: COMMAND fails, and what it says holds TEXT
# (the broker's or the TLS layer's own words, not any failure at all).
refused() {
	r_name=$1 r_text=$2
	shift 2
	if r_out=$("$@" 2>&1); then
		not_ok "$r_name" "command succeeded: $*" "$r_out"
	else
		case $r_out in
		*"$r_text"*) ok "$r_name" ;;
		*) not_ok "$r_name" "expected: $r_text" "$r_out" ;;
		esac
	fi
}

# kcat as PRINCIPAL (operator, consumer, purchase ...) with its own file.
kcat_as() {
	ka_user=$1
	shift
	kcat -F "$secrets/kafka-$ka_user.kcat" "$@"
}

# --- the honest path -------------------------------------------------------------
check "the operator's principal lists the brokers over SASL_SSL" fs_kcat -b "$client" -L -m 10

# --- no plaintext, no anonymous client ------------------------------------------
refused "the client listener refuses PLAINTEXT" "Disconnected while requesting ApiVersion" \
    kcat -b "$client" -L -m 3
refused "the controller listener refuses PLAINTEXT" "Disconnected while requesting ApiVersion" \
    kcat -b "$controller" -L -m 3
refused "TLS without SASL credentials is refused" "might require SASL authentication" \
    kcat -X security.protocol=SSL -X ssl.ca.location="$FLASHSALE_KAFKA_CA_FILE" -b "$client" -L -m 3

# --- a wrong password --------------------------------------------------------------
wrong=$FLASHSALE_STATE/kafka-wrong.kcat
(umask 077 && sed 's/^sasl.password=.*/sasl.password=0123456789abcdef/' "$secrets/kafka-operator.kcat" >"$wrong")
refused "the operator's name with a wrong password is refused" \
    "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512" \
    kcat -F "$wrong" -b "$client" -L -m 3
rm -f "$wrong"

# --- the broker's name and authority ------------------------------------------------
refused "a client that trusts only the system's authorities does not trust the broker" \
    "certificate verify failed" \
    kcat -F "$secrets/kafka-operator.kcat" -X ssl.ca.location=/etc/ssl/certs/ca-certificates.crt \
    -b "$client" -L -m 3

# --- each principal its job only ------------------------------------------------------
marker=forged-$$-$(date +%s)
printf '%s\t{"orderId":"%s","saleId":1,"itemId":1,"userId":"mallory","reservedAt":1}\n' 1 "$marker" \
    >"$FLASHSALE_STATE/forged.tsv"
r_out=$(kcat_as consumer -b "$client" -P -t "$topic" -K '\t' -l "$FLASHSALE_STATE/forged.tsv" 2>&1)
case $r_out in
*"Topic authorization failed"*) ok "the consumer's principal may not write an order (Topic authorization failed)" ;;
*) not_ok "the consumer's principal may not write an order (Topic authorization failed)" "$r_out" ;;
esac
r_out=$(kcat_as monitor -b "$client" -P -t "$topic" -K '\t' -l "$FLASHSALE_STATE/forged.tsv" 2>&1)
case $r_out in
*"Topic authorization failed"*) ok "the monitors' principal may not write an order either" ;;
*) not_ok "the monitors' principal may not write an order either" "$r_out" ;;
esac
rm -f "$FLASHSALE_STATE/forged.tsv"
is "$(topic_messages | grep -c "$marker")" "0" "no forged order reached the topic"
refused "the purchase handlers' principal may not read the orders" "Topic authorization failed" \
    kcat_as purchase -b "$client" -C -t "$topic" -o beginning -e -m 5
refused "the consumer's principal may not create a topic" "authorization failed" \
    env FLASHSALE_KAFKA_TOPIC=forged-topic FLASHSALE_KAFKA_USER=flashsale-consumer \
    FLASHSALE_KAFKA_PASSWORD_FILE="$secrets/kafka-consumer.password" "$FLASHSALE_BINDIR/flashsale-admin" kafka topics
check "the consumer's principal reads the orders" \
    kcat_as consumer -b "$client" -C -t "$topic" -o beginning -e -q -m 10

# The dead-letter replayer (flashsale-admin dlq replay as the stack runs it,
# deploy/stack env replayer): reads the dead letters and writes orders,
# nothing else: not the orders, not a dead letter, no topic, no ACL.
is "$("$stack" env replayer | sed -n "s/^export FLASHSALE_KAFKA_USER='\(.*\)'\$/\1/p")" "flashsale-replayer" \
    "the stack's dlq replay runs as flashsale-replayer"
check "the replayer's principal reads the dead letters" \
    kcat_as replayer -b "$client" -C -t "$topic.dlq" -o beginning -e -q -m 10
refused "the replayer's principal may not read the orders" "Topic authorization failed" \
    kcat_as replayer -b "$client" -C -t "$topic" -o beginning -e -m 5
printf 'x\t{}\n' >"$FLASHSALE_STATE/letter.tsv"
r_out=$(kcat_as replayer -b "$client" -P -t "$topic.dlq" -K '\t' -l "$FLASHSALE_STATE/letter.tsv" 2>&1)
rm -f "$FLASHSALE_STATE/letter.tsv"
case $r_out in
*"Topic authorization failed"*) ok "the replayer's principal may not write a dead letter (Topic authorization failed)" ;;
*) not_ok "the replayer's principal may not write a dead letter (Topic authorization failed)" "$r_out" ;;
esac
refused "the replayer's principal may not create a topic" "authorization failed" \
    env FLASHSALE_KAFKA_TOPIC=forged-topic FLASHSALE_KAFKA_USER=flashsale-replayer \
    FLASHSALE_KAFKA_PASSWORD_FILE="$secrets/kafka-replayer.password" "$FLASHSALE_BINDIR/flashsale-admin" kafka topics
refused "the replayer's principal may not grant ACLs" "authorization failed" \
    env FLASHSALE_KAFKA_USER=flashsale-replayer \
    FLASHSALE_KAFKA_PASSWORD_FILE="$secrets/kafka-replayer.password" "$FLASHSALE_BINDIR/flashsale-admin" kafka grants

# --- each program its principal -------------------------------------------------------
principal_of() {
	tr '\0' '\n' <"/proc/$(head -n 1 "$FLASHSALE_STATE/run/$1.pid")/environ" |
		sed -n 's/^FLASHSALE_KAFKA_USER=//p'
}
is "$(principal_of flashsale-purchase)" "flashsale-purchase" "the purchase handlers run as flashsale-purchase"
is "$(principal_of flashsale-consumer)" "flashsale-consumer" "the consumer runs as flashsale-consumer"
is "$(principal_of flashsale-metrics)" "flashsale-monitor" "the metrics handler runs as flashsale-monitor"

# --- no password in a log or a configuration others may read ---------------------------
leaks=
for f in "$secrets"/kafka-*.password; do
	leaks=$leaks$(grep -rlF "$(cat "$f")" "$FLASHSALE_STATE/log" 2>/dev/null)
done
is "$leaks" "" "no log holds a Kafka password"
is "$(stat -c %a "$FLASHSALE_STATE/conf/server.properties")" "600" \
    "the broker's configuration (its JAAS lines) is root's alone"
is "$(stat -c %a "$FLASHSALE_STATE/ca/ca.key")" "600" "the authority's key is 0600"
is "$(stat -c %a "$FLASHSALE_STATE/ca")" "700" "in a directory of root's alone"
