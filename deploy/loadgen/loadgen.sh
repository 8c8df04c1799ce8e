#!/bin/sh
# Drives throttled (TARGET, the proxy listener) with free and premium
# clients in rounds, forever, using hey (the williamyeh/hey image's /hey).
#
# Per round:
#   free-client-1, free-client-2: 2 workers x 10 req/s = 20 req/s each against
#     the free quota of 10/s -> about half get 429;
#   premium-client-1: 4 workers x 20 req/s = 80 req/s, inside its 100/s quota;
#   premium-client-2: a 20 s burst of 10 workers x 15 req/s = 150 req/s -> 429s.
# When the upstream slows down, the controller scales free down first (503s).
set -u
TARGET=${TARGET:-http://throttled:8080/}
ROUND=${ROUND:-60s}
HEY=${HEY:-/hey}

while :; do
	"$HEY" -z "$ROUND" -c 2 -q 10 -H "X-API-Key: free-client-1" "$TARGET" >/dev/null 2>&1 &
	"$HEY" -z "$ROUND" -c 2 -q 10 -H "X-API-Key: free-client-2" "$TARGET" >/dev/null 2>&1 &
	"$HEY" -z "$ROUND" -c 4 -q 20 -H "X-API-Key: premium-client-1" "$TARGET" >/dev/null 2>&1 &
	"$HEY" -z 20s -c 10 -q 15 -H "X-API-Key: premium-client-2" "$TARGET" >/dev/null 2>&1 &
	wait
	echo "loadgen: round done"
done
