package identity

import "net/http"

// Client is who a request comes from.
type Client struct {
	APIKey  string // from the configured API-key header
	Subject string // the subject of a verified JWT; "" when absent or not verified
	IP      string // the client IP as a bucket key (IPv6 grouped by prefix)
	// KeyVerified: a KeyVerifier accepted APIKey. Without one, a key is
	// only what the client claims (see enforce.UnassignedKeys).
	KeyVerified bool
}

// Key is the key that names the client for tier lookup: the API key,
// else the JWT subject, else "" (anonymous).
func (id *Client) Key() string {
	if id.APIKey != "" {
		return id.APIKey
	}
	return id.Subject
}

// Identifier tells who sent a request.
type Identifier interface {
	Identify(r *http.Request) Client
}
