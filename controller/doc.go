// Package controller is the adaptive part of throttled: a control law that
// turns health signals (latency, error ratio, saturation) into one rate
// multiplier per tier, and a loop that runs the law every period and
// publishes the multipliers while it holds a leader lease.
//
// # The law
//
// [Law.Step] is a pure function of the previous [State], the signals
// ([Input]) and the time. It is priority-ordered AIMD:
//
//   - Overloaded (any usable signal above its target): the lowest-priority
//     tier still above its floor is cut, m = max(floor, m × β). At most one
//     cut per [Settings.Cooldown] (across all tiers), so that a cut can show
//     its effect on the signals before the next one.
//   - Healthy (every usable signal below target × (1 − headroom), and at
//     least one usable): the highest-priority tier below its ceiling gains
//     α, m = min(ceiling, m + α). Increases have no cool-down of their own:
//     the additive step per period is their rate limit, and the hysteresis
//     band keeps them from flapping with the cuts.
//   - In between (the hysteresis band): hold.
//   - No usable signal (NaN, ±Inf targets, Valid false, stale, or none at
//     all): hold. Once [Settings.HoldTimeout] has passed since the last
//     usable reading, recover: each step raises the highest-priority tier
//     below its ceiling by α, exactly as a healthy step would. Recovery
//     follows priority order rather than raising every tier at once because
//     a blind controller (Prometheus down) is often blind during the same
//     incident that made it cut, and re-admitting the free tier first would
//     invert the priorities the cuts were protecting.
//
// Tiers are ordered by Priority (0 first = most important), ties by Name.
// Whatever the input — NaN or infinite values, a State from an older
// configuration or a corrupt store — every multiplier Step returns is
// finite and within its tier's [floor, ceiling].
//
// # The loop
//
// [Loop.Run] ticks every [Settings.Period] (± [Settings.Jitter]): it reads
// the [Source], renews or acquires the [Lease], steps the law and, only
// while it holds the lease, publishes a [multiplier.Set] (every tick, as a
// heartbeat, even when nothing changed). Followers step the law too, in
// shadow, so that a replica that becomes leader without a [Loader] starts
// from a state driven by the same signals rather than from the ceilings. A
// replica whose Renew fails or returns false stops publishing in that same
// tick and tries to Acquire again from the next one. On exit Run releases
// the lease it holds.
//
// A new leader whose [Publisher] is also a [Loader] first loads the last
// published multipliers and continues from them, with an epoch no lower
// than the published one, so that enforcers never see a leader change as
// a jump in the multipliers or an epoch going backwards. Until that load
// succeeds it does not publish. A loaded set older than HoldTimeout is
// distrusted: the new leader keeps its shadow multipliers and publishes
// them under a newer epoch.
//
// # Metrics
//
//   - throttled_tier_multiplier{tier}: the published multipliers; exported
//     only by the leader (a replica that loses the lease removes them), so
//     that summing or max-ing over replicas gives the applied value.
//   - throttled_controller_signal{signal}: the last value of each usable
//     signal, on every replica. A signal that is unusable (NaN, stale,
//     Valid false) or missing in a tick has its series removed rather than
//     set to NaN or left at its last value, so a dashboard shows a gap and
//     absent() alerts can fire.
//   - throttled_controller_steps_total{tier,action}: one count per tier per
//     published step (leader only), labelled with the tier's action (hold, decrease,
//     increase, recover).
//   - throttled_controller_leader: 1 while this replica holds the lease.
package controller
