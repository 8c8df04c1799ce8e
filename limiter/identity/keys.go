package identity

import "context"

// KeyVerifier tells whether an API key is genuine. New calls it on every
// request that carries a key, so it must be fast (cache what it looks up)
// and safe for concurrent use. A key it refuses is ignored: the request is
// anonymous, as with a JWT that fails verification.
type KeyVerifier interface {
	VerifyKey(ctx context.Context, key string) bool
}

// KeyVerifierFunc adapts a function to KeyVerifier.
type KeyVerifierFunc func(ctx context.Context, key string) bool

// VerifyKey calls f.
func (f KeyVerifierFunc) VerifyKey(ctx context.Context, key string) bool { return f(ctx, key) }
