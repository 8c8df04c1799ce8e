package enforce

// TierLookup finds the tier assigned to a client key.
type TierLookup interface {
	TierOf(client string) (tier string, ok bool)
}
