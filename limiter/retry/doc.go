// Package retry is the client side: Transport is an http.RoundTripper that
// retries 429 and 503 answers of idempotent requests, honouring
// Retry-After, with exponential backoff and full jitter otherwise, within a
// retry budget.
package retry
