// Package controller is the adaptive part of throttled: a control law that
// turns health signals (latency, error ratio, saturation) into one rate
// multiplier per tier, and a loop that runs the law every period and
// publishes the multipliers while it holds a leader lease.
//
// # The law
//
// [Law.Step] is a pure function of the previous [State], the signals
// ([Input]) and the time. It is priority-ordered, proportional AIMD:
//
//   - Overloaded (any usable signal above its target): the lowest-priority
//     tier still above its floor is cut in proportion to the overload,
//     m = max(floor, m × max(β, 1/r)), r the worst usable value ÷ target: a
//     small overshoot gives a small cut, a big one at most β. The tier
//     remembers the level it was cut from (its knee, [TierState.Knee]) and,
//     when the admitted rate is measured ([Input.Admitted]), its rate cap
//     ([TierState.Rate]) becomes min(measured, cap) × the cut. At most one
//     cut per [Settings.Cooldown] (across all tiers), so that a cut can show
//     its effect on the signals before the next one.
//   - Healthy (every usable signal below target × (1 − headroom), and at
//     least one usable): the highest-priority tier below its ceiling grows
//     in proportion to the headroom, m = max(m + α, m × min(Growth, band/r)),
//     but below its knee only part of the way back to it, so that it does
//     not return straight into the overload that made it cut. A rate cap
//     grows with the multiplier and is lifted at the ceiling. Increases have
//     no cool-down of their own; the hysteresis band keeps them from
//     flapping with the cuts.
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
// # Every move explained
//
// Each tier carries why its multiplier last changed ([TierState].Reason,
// see [Reason]: "decrease: latency 0.82s > target 0.25s") and since when;
// the published set carries both, so every enforcer can tell them. The
// leader logs each change at INFO ("controller: multiplier changed": tier,
// from, to, action, signal, value, target, reason, epoch) and nothing for
// a hold. A [ConcurrencyLoop] given [WithLimitLog] summarises its limit
// changes at most once per [LimitLogEvery].
//
// # Metrics
//
//   - throttled_tier_multiplier{tier}: the published multipliers; exported
//     only by the leader (a replica that loses the lease removes them), so
//     that summing or max-ing over replicas gives the applied value.
//   - throttled_controller_signal_seconds{signal} (latency signals: names
//     starting with "latency") and throttled_controller_signal_ratio{signal}
//     (every other signal: error_ratio, saturation): the last value of each
//     usable signal, in its base unit, on every replica. A signal that is
//     unusable (NaN, stale, Valid false) or missing in a tick has its series
//     removed rather than set to NaN or left at its last value, so a
//     dashboard shows a gap and absent() alerts can fire.
//   - throttled_controller_signal_target_seconds{signal} and
//     throttled_controller_signal_target_ratio{signal}: each signal's
//     target, while the signal is read (usable or not).
//   - throttled_controller_steps_total{tier,action}: one count per tier per
//     published step (leader only), labelled with the tier's action (hold, decrease,
//     increase, recover).
//   - throttled_controller_leader: 1 while this replica holds the lease.
//   - throttled_controller_instances and
//     throttled_controller_instance_factors: under [ScopeInstance], on the
//     leader, the instances stepped on their own signals and the own
//     factors published (pairs of an instance and a tier); 0 otherwise.
//
// # Two loops
//
// The law and loop above are the outer, global loop: slow (a period of
// seconds, driven by Prometheus), shared by every enforcing instance
// through the multipliers in Redis, and priority-ordered across tiers. It
// cannot see the first seconds of a surge. The inner loop can: every
// enforcing instance runs one [ConcurrencyLoop] per upstream, which every
// [GradientSettings.Interval] (100 ms) reads the instance's own latency
// samples from its [Gate] and moves the gate's concurrency limit. The gate
// (bulkhead.Gate) admits calls below the limit, queues the rest briefly by
// priority, and sheds the least important first (503 "shed").
//
// They form a cascade. The inner loop protects latency now, within one or
// two intervals, but only locally and by shedding. The outer loop moves
// the steady state: it cuts the lowest tiers' rates for the whole fleet,
// so that the offered load falls back under capacity and the inner loop
// rarely has to act (its limit then sits above the calls in flight and
// sheds nothing). Each loop needs no knowledge of the other; they interact
// only through the upstream's latency.
//
// # The concurrency law
//
// [Gradient.Step] is a pure function of the previous [GradientState], the
// gate's [Window] and the time, in the style of Netflix's Gradient2 and
// Envoy's gradient controller:
//
//	gradient = clamp(baseline × (1 + Tolerance) / latency, 0.5, 2)
//	estimate = limit × gradient + Allowance
//	limit    = clamp(limit + (estimate − limit) × Smoothing, MinLimit, MaxLimit)
//
// latency is the window's average. With a [GradientSettings.Target] the
// gradient is at least min(1, Target × Quiet / latency): latency at or
// below the quiet bound never decreases the limit, and just above it the
// limit decreases a little, not by half (a baseline learned before the
// upstream slowed down would otherwise saw the limit under what keeps the
// upstream busy). Above Target the gradient is at most Target / latency
// and no allowance is added: the limit always decreases. An estimate
// above the limit is not taken while fewer than three quarters of the
// permits were in use in the window (latency at low concurrency says
// nothing about a higher limit), so the limit stays near what is used and
// binds soon when the upstream slows down or a surge starts. Such a
// limit, unused, falls towards 2 × the most in flight + Allowance with
// time constant [GradientSettings.DecayWindow], so that N instances behind
// one upstream meet a surge at limits that follow their shares, not at
// N × InitialLimit; not in a window whose [Window.RunDelay] is at or above
// [GradientSettings.DecayStarvedDelay] (a process short of CPU stalls its
// own callers). Within Target the limit keeps the permits the window's
// priority-0 calls need at its latency ([Window.TopAsked] per second ×
// min(latency, Target × Quiet) × (1 + Tolerance)): under one latency the
// instances behind one upstream settle at one limit whatever their
// shares, and the busiest would shed its premium calls at its gate. A
// window with fewer than MinSamples samples holds. Behind a saturated
// upstream (W workers) the law settles near W × (1 + Tolerance) +
// Allowance calls in flight per instance.
//
// The baseline is the latency without queueing. Envoy measures it by
// pinning the limit low from time to time; that would shed premium traffic
// on a schedule, so it is not used here. Like Gradient2, this law learns
// it from live traffic: the first baseline is the first window's fastest
// call, then the baseline falls at once (halfway) towards any faster
// window average and rises slowly (exponential average, time constant
// BaselineWindow, 30 s) towards a slower one. The slow rise follows real
// changes in the upstream, but under a sustained overload it lets the
// limit drift up; that is the outer loop's time scale, and Target bounds
// it. A baseline too low would pin the limit at MinLimit: after
// RelearnAfter there, the baseline is taken afresh from the current window
// (the probe Envoy also runs after 5 windows at its minimum).
//
// The inner loop's metrics, labelled with the loop's name:
// throttled_inner_loop_steps_total{name,action} (hold, decrease,
// increase), throttled_inner_loop_relearns_total{name},
// throttled_inner_loop_baseline_seconds{name} and
// throttled_inner_loop_latency_seconds{name}. The limit itself is the
// gate's throttled_concurrency_limit{name}.
package controller
