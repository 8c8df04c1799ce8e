// Package signals reads the health signals the adaptive controller steers
// by: a latency quantile (seconds), an error ratio (0..1) and, optionally, a
// saturation figure; and the rate of admitted requests per tier ([Rates]),
// which the controller turns into tier-wide rate caps.
//
// Two sources satisfy [Source]:
//
//   - [Prometheus] runs one PromQL instant query per signal against a
//     Prometheus HTTP API (defaults: [LatencyQuery] and [ErrorRatioQuery]
//     on the series a required selector such as job="checkout" picks,
//     [DefaultAdmittedQuery]; saturation only when a query is given).
//   - [InProcess] computes the same signals from a prometheus.Gatherer (the
//     process's own registry): windowed values from the change between two
//     successive reads, as rate() and histogram_quantile() would; the
//     admitted rates from a counter with a "tier" label
//     ([DefaultAdmittedCounter], its decision="allowed" and "delayed" series), divided by
//     the time between the two reads.
//
// # Validity
//
// A signal that cannot be trusted is never reported as 0: every [Value]
// carries Valid and, when it is false, a [Reason]. A value is invalid when
//
//   - the signal is not configured ([Disabled]): consumers ignore it;
//   - the query failed: transport error, timeout, bad PromQL ([QueryError],
//     detail in Value.Err and in Read's error);
//   - the answer is empty: no series, or a metric that is not there ([NoData]);
//   - the answer is NaN ([NaN]) or ±Inf ([Inf]);
//   - the answer is not a scalar or an instant vector (a range vector), or an
//     in-process metric has the wrong type ([Unsupported]);
//   - the sample's timestamp is more than MaxAge away from the source's clock,
//     in either direction ([Stale]): a lagging server, a cache or clock skew;
//   - in-process: there is no earlier read to take a window from
//     ([NoBaseline]) or no request arrived in the window ([NoTraffic]).
//
// A vector with several series yields its largest finite sample (the worst
// instance drives throttling); non-finite series are skipped, and only when
// none is finite is the value invalid. In process, the saturation gauge's
// series that carry an [InstanceLabel] (the fleet's, read from the tally)
// are also kept one by one, in Signals.SaturationByInstance: a controller
// whose scope is the instance steps each by its own.
//
// The admitted rates are judged sample by sample: each needs a "tier"
// label, a finite value that is not negative and a fresh timestamp;
// samples of one tier are summed (a query by tier and rule, or by tier and
// instance, gives the tier's total); a tier without a usable sample is left
// out, so that the consumer treats it as unknown rather than 0. Rates is
// invalid only when no tier is left, with the reason of the first unusable
// sample (NoData for none, Unsupported when none had a tier label). A tier
// whose counter did not move is a valid 0.
//
// Read always returns a complete [Signals]; its error joins the query
// failures for logging and never has to be checked to stay safe.
package signals
