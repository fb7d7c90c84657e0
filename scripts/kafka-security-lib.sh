# Broker-side security for scripts/kafka-start.sh (sourced, not run): with
# KAFKA_SECURITY=sasl_ssl the client listener speaks SASL over TLS, as managed
# Kafka services do. The default, KAFKA_SECURITY=none, changes nothing.
#
# Environment (all optional):
#   KAFKA_SECURITY        none (PLAINTEXT, the default) or sasl_ssl
#   KAFKA_ACLS            true: the StandardAuthorizer is on and a client may do
#                         only what an ACL allows; admin (and the controller
#                         listener's ANONYMOUS) are super users (default: false)
#   KAFKA_SASL_USERS      users besides admin, comma-separated (default: client)
#   KAFKA_SSL_CERT_NAMES  host names and IPv4 addresses the broker certificate
#                         covers (default: localhost,127.0.0.1)
#   KAFKA_SSL_CLIENT_AUTH none, requested or required: whether the broker asks
#                         clients for a certificate of the test CA (default: none)
#   KAFKA_OAUTHBEARER_UNSECURED  true: OAUTHBEARER enabled too, with Kafka's
#                         unsecured validator, which takes any unsigned token
#                         (alg none) at its word; for testing clients only
#   KAFKA_OAUTHBEARER_JWKS_URL  OAUTHBEARER enabled too, with Kafka's own
#                         OAuthBearerValidatorCallbackHandler: a token's signature
#                         is checked against the keys at this URL (an identity
#                         provider's JWKS), as a production broker does. Not with
#                         KAFKA_OAUTHBEARER_UNSECURED. With it:
#     KAFKA_OAUTHBEARER_AUDIENCE   required `aud` (default: none checked)
#     KAFKA_OAUTHBEARER_ISSUER     required `iss` (default: none checked)
#     KAFKA_OAUTHBEARER_JWKS_REFRESH_MS  how often the broker fetches the keys
#                         again (Kafka's default: 3600000)
#     KAFKA_OAUTHBEARER_CLOCK_SKEW_S  leeway on exp, nbf and iat (Kafka's default: 30)
#   KAFKA_CONNECTIONS_MAX_REAUTH_MS  connections.max.reauth.ms: a client must log
#                         in again within this time (and, with OAUTHBEARER, before
#                         its token expires) or be disconnected (default: 0, never)
#
# Every user has a random password, the same for SCRAM-SHA-256, SCRAM-SHA-512
# and PLAIN. SCRAM users are written into the metadata log when storage is
# formatted (kafka-storage format --add-scram), which is the only way to have
# them before the broker first accepts a SASL client. admin is the broker's own
# user on the inter-broker listener.
#
# Material is kept in $STATE_DIR/security and reused by later starts with the
# same state dir, so settings a client was given stay valid across restarts:
#   ca.pem                  the throw-away CA to trust (KAFKA_SSL_CA_FILE)
#   ca-key.pem              its key (never leaves this directory)
#   broker.pem              broker key and certificate (re-issued on each fresh start)
#   client-cert.pem, client-key.pem  a client certificate of the same CA
#   users/<name>.password   each user's password (KAFKA_SASL_PASSWORD_FILE)
#   client.env              the gateway settings for the first non-admin user
#
# Needs openssl, and log() and die() from the caller.

KAFKA_SECURITY="${KAFKA_SECURITY:-none}"
KAFKA_ACLS="${KAFKA_ACLS:-false}"
KAFKA_SASL_USERS="${KAFKA_SASL_USERS:-client}"
KAFKA_SSL_CERT_NAMES="${KAFKA_SSL_CERT_NAMES:-localhost,127.0.0.1}"
KAFKA_SSL_CLIENT_AUTH="${KAFKA_SSL_CLIENT_AUTH:-none}"
KAFKA_OAUTHBEARER_UNSECURED="${KAFKA_OAUTHBEARER_UNSECURED:-false}"
KAFKA_OAUTHBEARER_JWKS_URL="${KAFKA_OAUTHBEARER_JWKS_URL:-}"
KAFKA_OAUTHBEARER_AUDIENCE="${KAFKA_OAUTHBEARER_AUDIENCE:-}"
KAFKA_OAUTHBEARER_ISSUER="${KAFKA_OAUTHBEARER_ISSUER:-}"
KAFKA_OAUTHBEARER_JWKS_REFRESH_MS="${KAFKA_OAUTHBEARER_JWKS_REFRESH_MS:-}"
KAFKA_OAUTHBEARER_CLOCK_SKEW_S="${KAFKA_OAUTHBEARER_CLOCK_SKEW_S:-}"
KAFKA_CONNECTIONS_MAX_REAUTH_MS="${KAFKA_CONNECTIONS_MAX_REAUTH_MS:-0}"
# JVM system properties the broker needs (scripts/kafka-start.sh passes them); empty without them.
KAFKA_SECURITY_JVM_OPTS=()
# --add-scram arguments for kafka-storage format; empty without SASL.
KAFKA_SECURITY_FORMAT_ARGS=()

# Marks a server.properties whose client listener this file secured.
_KAFKA_SECURITY_MARKER='# core-gateway security: sasl_ssl'
_KAFKA_SECURITY_PREPARED=0

_kafka_security_validate() {
  [[ "$KAFKA_SECURITY" =~ ^(none|sasl_ssl)$ ]] || die "KAFKA_SECURITY must be none or sasl_ssl; got \"$KAFKA_SECURITY\""
  [[ "$KAFKA_ACLS" =~ ^(true|false)$ ]] || die "KAFKA_ACLS must be true or false; got \"$KAFKA_ACLS\""
  [[ "$KAFKA_OAUTHBEARER_UNSECURED" =~ ^(true|false)$ ]] || die "KAFKA_OAUTHBEARER_UNSECURED must be true or false; got \"$KAFKA_OAUTHBEARER_UNSECURED\""
  [[ "$KAFKA_SSL_CLIENT_AUTH" =~ ^(none|requested|required)$ ]] || die "KAFKA_SSL_CLIENT_AUTH must be none, requested or required; got \"$KAFKA_SSL_CLIENT_AUTH\""
  [[ "$KAFKA_CONNECTIONS_MAX_REAUTH_MS" =~ ^[0-9]+$ ]] || die "KAFKA_CONNECTIONS_MAX_REAUTH_MS must be a whole number; got \"$KAFKA_CONNECTIONS_MAX_REAUTH_MS\""
  if [[ -n "$KAFKA_OAUTHBEARER_JWKS_URL" ]]; then
    [[ "$KAFKA_OAUTHBEARER_JWKS_URL" =~ ^https?://[^[:space:],]+$ ]] || die "KAFKA_OAUTHBEARER_JWKS_URL must be an http(s) URL; got \"$KAFKA_OAUTHBEARER_JWKS_URL\""
    [[ "$KAFKA_OAUTHBEARER_UNSECURED" == false ]] || die "KAFKA_OAUTHBEARER_JWKS_URL and KAFKA_OAUTHBEARER_UNSECURED=true exclude each other: one validator per listener"
    [[ -z "$KAFKA_OAUTHBEARER_JWKS_REFRESH_MS" || "$KAFKA_OAUTHBEARER_JWKS_REFRESH_MS" =~ ^[0-9]+$ ]] || die "KAFKA_OAUTHBEARER_JWKS_REFRESH_MS must be a whole number"
    [[ -z "$KAFKA_OAUTHBEARER_CLOCK_SKEW_S" || "$KAFKA_OAUTHBEARER_CLOCK_SKEW_S" =~ ^[0-9]+$ ]] || die "KAFKA_OAUTHBEARER_CLOCK_SKEW_S must be a whole number"
    # Kafka 4 fetches from no URL that this property does not list (CVE-2025-27817).
    KAFKA_SECURITY_JVM_OPTS=("-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=$KAFKA_OAUTHBEARER_JWKS_URL")
  fi
  if [[ "$KAFKA_SECURITY" == none ]]; then
    [[ "$KAFKA_ACLS" == false ]] || die "KAFKA_ACLS=true needs KAFKA_SECURITY=sasl_ssl: without SASL every client is ANONYMOUS"
    return 0
  fi
  local user name
  for user in ${KAFKA_SASL_USERS//,/ }; do
    [[ "$user" =~ ^[A-Za-z0-9._-]+$ ]] || die "KAFKA_SASL_USERS: \"$user\" is not a plain user name"
    [[ "$user" != admin ]] || die "KAFKA_SASL_USERS: admin is the broker's own user and always exists"
  done
  for name in ${KAFKA_SSL_CERT_NAMES//,/ }; do
    [[ "$name" =~ ^[A-Za-z0-9.-]+$ ]] || die "KAFKA_SSL_CERT_NAMES: \"$name\" is not a host name or IPv4 address"
  done
  command -v openssl >/dev/null || die "openssl not found (needed for KAFKA_SECURITY=sasl_ssl)"
}

_kafka_security_dir() { printf '%s/security' "$STATE_DIR"; }

# URL-safe random text: fits JAAS quoting and the --add-scram syntax as it is.
_kafka_security_random() { head -c 18 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'; }

_kafka_security_password() {
  local file
  file="$(_kafka_security_dir)/users/$1.password"
  if [[ ! -s "$file" ]]; then
    (umask 077 && _kafka_security_random >"$file")
  fi
  cat "$file"
}

_kafka_security_san() {
  local name out=""
  for name in ${KAFKA_SSL_CERT_NAMES//,/ }; do
    if [[ "$name" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]]; then out+="${out:+,}IP:$name"; else out+="${out:+,}DNS:$name"; fi
  done
  printf '%s' "$out"
}

# Issues a certificate of the test CA: $1 file prefix, $2 subject CN, $3 extension lines.
_kafka_security_issue() {
  local dir prefix="$1" cn="$2" extensions="$3"
  dir="$(_kafka_security_dir)"
  (umask 077 && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -keyout "$dir/$prefix-key.pem" -out "$dir/$prefix.csr" -subj "/CN=$cn" 2>/dev/null) \
    || die "openssl could not make a key for $prefix"
  openssl x509 -req -in "$dir/$prefix.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca-key.pem" \
      -set_serial "0x$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" -days 825 \
      -extfile <(printf '%s\n' "$extensions") -out "$dir/$prefix-cert.pem" 2>/dev/null \
    || die "openssl could not sign the $prefix certificate"
  rm -f -- "$dir/$prefix.csr"
}

# CA and client certificate once per state dir; the broker certificate on every
# fresh start, so a changed KAFKA_SSL_CERT_NAMES takes effect.
_kafka_security_prepare() {
  (( _KAFKA_SECURITY_PREPARED )) && return 0
  local dir user
  dir="$(_kafka_security_dir)"
  mkdir -p "$dir/users"
  chmod 700 "$dir"
  if [[ ! -s "$dir/ca.pem" || ! -s "$dir/ca-key.pem" ]]; then
    (umask 077 && openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$dir/ca-key.pem" -out "$dir/ca.pem" -days 3650 \
        -subj "/CN=core-gateway throw-away test CA $(_kafka_security_random | head -c 8)" \
        -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign' 2>/dev/null) \
      || die "openssl could not make the test CA"
    chmod 644 "$dir/ca.pem"
    rm -f -- "$dir/client-cert.pem"
  fi
  local first_name="${KAFKA_SSL_CERT_NAMES%%,*}"
  _kafka_security_issue broker "$first_name" "subjectAltName=$(_kafka_security_san)
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth"
  # Kafka's PEM keystore: the private key, then the certificate chain, in one file.
  (umask 077 && cat "$dir/broker-key.pem" "$dir/broker-cert.pem" >"$dir/broker.pem")
  rm -f -- "$dir/broker-key.pem" "$dir/broker-cert.pem"
  if [[ ! -s "$dir/client-cert.pem" ]]; then
    _kafka_security_issue client core-gateway-test-client "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
  fi
  _kafka_security_password admin >/dev/null
  for user in ${KAFKA_SASL_USERS//,/ }; do _kafka_security_password "$user" >/dev/null; done
  _KAFKA_SECURITY_PREPARED=1
}

# JAAS line of one SASL mechanism on the client listener.
_kafka_security_jaas() {
  local admin_password user plain_users=""
  admin_password="$(_kafka_security_password admin)"
  case "$1" in
    scram)
      printf 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="%s";' "$admin_password" ;;
    plain)
      for user in admin ${KAFKA_SASL_USERS//,/ }; do
        plain_users+=" user_$user=\"$(_kafka_security_password "$user")\""
      done
      printf 'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="%s"%s;' "$admin_password" "$plain_users" ;;
    oauthbearer)
      printf 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";' ;;
    oauthbearer-jwks)
      printf 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;' ;;
  esac
}

# Prints key=value when value is set; Kafka's default stands otherwise.
_kafka_security_setting() {
  if [[ -n "$2" ]]; then printf '%s=%s\n' "$1" "$2"; fi
}

# Turns the PLAINTEXT client listener of one node's server.properties into
# SASL_SSL and appends what that needs. The CONTROLLER listener stays as it is.
# Usage: kafka_security_configure CONFIG
kafka_security_configure() {
  local config="$1" dir mechanisms="SCRAM-SHA-256,SCRAM-SHA-512,PLAIN"
  [[ "$KAFKA_SECURITY" == sasl_ssl ]] || return 0
  _kafka_security_prepare
  dir="$(_kafka_security_dir)"
  [[ "$KAFKA_OAUTHBEARER_UNSECURED" == true || -n "$KAFKA_OAUTHBEARER_JWKS_URL" ]] && mechanisms+=",OAUTHBEARER"
  # The password of admin (and PLAIN's user list) are in this file from now on.
  chmod 600 "$config"
  sed -i -E \
    -e '/^(listeners|advertised\.listeners)=/s#(^|[=,])PLAINTEXT://#\1SASL_SSL://#g' \
    -e '/^listener\.security\.protocol\.map=/s#(^|[=,])PLAINTEXT:PLAINTEXT#\1SASL_SSL:SASL_SSL#' \
    -e 's#^inter\.broker\.listener\.name=PLAINTEXT$#inter.broker.listener.name=SASL_SSL#' \
    "$config"
  grep -q '^listeners=.*SASL_SSL://' "$config" || die "no PLAINTEXT client listener in $config to secure"
  {
    echo
    echo "$_KAFKA_SECURITY_MARKER (scripts/kafka-security-lib.sh)"
    echo "sasl.enabled.mechanisms=$mechanisms"
    echo "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512"
    echo "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=$(_kafka_security_jaas scram)"
    echo "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=$(_kafka_security_jaas scram)"
    echo "listener.name.sasl_ssl.plain.sasl.jaas.config=$(_kafka_security_jaas plain)"
    if [[ "$KAFKA_OAUTHBEARER_UNSECURED" == true ]]; then
      echo "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=$(_kafka_security_jaas oauthbearer)"
    fi
    if [[ -n "$KAFKA_OAUTHBEARER_JWKS_URL" ]]; then
      # Kafka's own validator: signature by a key of the JWKS, exp, and aud/iss when set.
      echo "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=$(_kafka_security_jaas oauthbearer-jwks)"
      echo "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
      echo "sasl.oauthbearer.jwks.endpoint.url=$KAFKA_OAUTHBEARER_JWKS_URL"
      _kafka_security_setting sasl.oauthbearer.expected.audience "$KAFKA_OAUTHBEARER_AUDIENCE"
      _kafka_security_setting sasl.oauthbearer.expected.issuer "$KAFKA_OAUTHBEARER_ISSUER"
      _kafka_security_setting sasl.oauthbearer.jwks.endpoint.refresh.ms "$KAFKA_OAUTHBEARER_JWKS_REFRESH_MS"
      _kafka_security_setting sasl.oauthbearer.clock.skew.seconds "$KAFKA_OAUTHBEARER_CLOCK_SKEW_S"
    fi
    if (( KAFKA_CONNECTIONS_MAX_REAUTH_MS > 0 )); then
      echo "connections.max.reauth.ms=$KAFKA_CONNECTIONS_MAX_REAUTH_MS"
    fi
    echo "ssl.keystore.type=PEM"
    echo "ssl.keystore.location=$dir/broker.pem"
    echo "ssl.truststore.type=PEM"
    echo "ssl.truststore.location=$dir/ca.pem"
    # On a SASL_SSL listener Kafka heeds only the listener-prefixed form (KIP-684).
    echo "listener.name.sasl_ssl.ssl.client.auth=$KAFKA_SSL_CLIENT_AUTH"
    echo "ssl.endpoint.identification.algorithm=https"
    if [[ "$KAFKA_ACLS" == true ]]; then
      echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
      # The controller listener is PLAINTEXT, so the broker reaches its controller as ANONYMOUS.
      echo "super.users=User:admin;User:ANONYMOUS"
      echo "allow.everyone.if.no.acl.found=false"
    fi
  } >>"$config"
  local user
  KAFKA_SECURITY_FORMAT_ARGS=()
  for user in admin ${KAFKA_SASL_USERS//,/ }; do
    KAFKA_SECURITY_FORMAT_ARGS+=(
      --add-scram "SCRAM-SHA-256=[name=$user,password=$(_kafka_security_password "$user")]"
      --add-scram "SCRAM-SHA-512=[name=$user,password=$(_kafka_security_password "$user")]"
    )
  done
}

# After start: records the client settings and prints them (passwords only as files).
# Usage: kafka_security_report CONFIG BOOTSTRAP
kafka_security_report() {
  local config="$1" bootstrap="$2" dir user
  grep -qF "$_KAFKA_SECURITY_MARKER" "$config" 2>/dev/null || return 0
  dir="$(_kafka_security_dir)"
  user="${KAFKA_SASL_USERS%%,*}"
  [[ -n "$user" && -s "$dir/users/$user.password" ]] || user=admin
  (umask 077 && cat >"$dir/client.env" <<EOF
KAFKA_BROKERS=$bootstrap
KAFKA_SSL=true
KAFKA_SSL_CA_FILE=$dir/ca.pem
KAFKA_SASL_MECHANISM=scram-sha-512
KAFKA_SASL_USERNAME=$user
KAFKA_SASL_PASSWORD_FILE=$dir/users/$user.password
EOF
  )
  if grep -Eq '^listener\.name\.sasl_ssl\.ssl\.client\.auth=(required|requested)$' "$config"; then
    printf 'KAFKA_SSL_CERT_FILE=%s\nKAFKA_SSL_KEY_FILE=%s\n' "$dir/client-cert.pem" "$dir/client-key.pem" >>"$dir/client.env"
  fi
  log "SASL_SSL on $bootstrap (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN$(grep -q '^sasl.enabled.mechanisms=.*OAUTHBEARER' "$config" && { grep -q '^sasl.oauthbearer.jwks.endpoint.url=' "$config" && printf ', OAUTHBEARER checked against %s' "$(sed -n 's/^sasl.oauthbearer.jwks.endpoint.url=//p' "$config")" || printf ', unsecured OAUTHBEARER'; }))$(grep -q '^authorizer.class.name=' "$config" && printf '; ACLs on, super user admin')"
  log "CA to trust: $dir/ca.pem (client certificate: $dir/client-cert.pem, key $dir/client-key.pem)"
  log "users: $(cd "$dir/users" && ls | sed 's/\.password$//' | paste -sd, -) (passwords in $dir/users/<name>.password)"
  log "gateway settings ($dir/client.env):"
  sed 's/^/kafka-start:   /' "$dir/client.env"
}

# Checked when sourced, before any directory is made or node launched.
_kafka_security_validate
