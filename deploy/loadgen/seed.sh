#!/bin/sh
# Assigns the load generator's premium API keys to the premium tier through
# the admin API (every other key gets default_tier: free). Waits for
# throttled to answer; an assignment that already exists is replaced.
set -u
ADMIN_URL=${ADMIN_URL:-http://throttled:9090}
ADMIN_TOKEN=${ADMIN_TOKEN:-change-me-in-production}

put() { # key tier [if-match]
	curl -s -o /dev/null -w '%{http_code}' -X PUT \
		-H "Authorization: Bearer $ADMIN_TOKEN" \
		-H 'Content-Type: application/json' \
		${3:+-H "If-Match: $3"} \
		-d "{\"tier\": \"$2\"}" \
		"$ADMIN_URL/v1/keys/$1"
}

assign() { # key tier
	i=0
	while [ "$i" -lt 60 ]; do
		code=$(put "$1" "$2")
		[ "$code" = 428 ] && code=$(put "$1" "$2" '*')
		case $code in
		2??) echo "seed: $1 -> $2"; return 0 ;;
		esac
		i=$((i + 1))
		sleep 1
	done
	echo "seed: could not assign $1 to $2 (last status $code)" >&2
	return 1
}

assign premium-client-1 premium && assign premium-client-2 premium
