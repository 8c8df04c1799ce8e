package limiter

import "net/http"

// Identity is who a request comes from.
type Identity struct {
	APIKey  string // from the configured API-key header
	Subject string // the subject of a verified JWT; "" when absent or not verified
	IP      string // the client IP as a bucket key (IPv6 grouped by prefix)
}

// Client is the key that names the client for tier lookup: the API key,
// else the JWT subject, else "" (anonymous).
func (id *Identity) Client() string {
	if id.APIKey != "" {
		return id.APIKey
	}
	return id.Subject
}

// Identifier tells who sent a request.
type Identifier interface {
	Identify(r *http.Request) Identity
}

// TierLookup finds the tier assigned to a client key.
type TierLookup interface {
	TierOf(client string) (tier string, ok bool)
}

// MultiplierSource gives the current load multiplier of a tier (1 when
// healthy). It must be cheap: it is called on every decision.
type MultiplierSource interface {
	Multiplier(tier string) float64
}
