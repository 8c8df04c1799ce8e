// Package overload is the machinery of `throttled bench overload` and of
// `throttled demo`: a protected backend with a fixed capacity, named load
// scenarios, an open-loop load generator, exact per-second statistics and
// the report that judges the enforcement stack put between them.
//
// The caller supplies the stack (a StackFunc that starts one or more
// enforcing instances in front of the backend's URL); Run does the rest:
//
//	clients (open loop) → stack (the caller's) → backend (capacity C)
//
// RunSettings.Front says where the clients meet the stack: a proxy to the
// backend's listener (StackSpec.Backend), or, for the middleware fronts,
// the backend's own handler (StackSpec.Handler) served in the stack's
// process; either way the backend's workers and counts are the same.
//
//	bs := overload.BackendSettings{}                // 8 workers × 20 ms: C = 400 req/s
//	sc, err := overload.Lookup("surge", bs.Capacity())
//	rep, err := overload.Run(ctx, sc, overload.RunSettings{
//		Duration: 60 * time.Second, Mode: overload.Controller, Backend: bs,
//		Stack: startStack, // builds tiers and assignments from spec.Scenario
//	})
//	json.NewEncoder(os.Stdout).Encode(rep)
//
// Time base: second k of a run is [start+k s, start+k+1 s). A request
// belongs to the second its schedule made it due in (its send time), even
// when it is answered in a later second, so every scheduled request lands
// in exactly one row in exactly one Class, and the totals are the sums of
// the rows. A row is finished (and handed to RunSettings.OnRow) once the
// schedule has moved past its second and its last request was answered.
//
// Phases: the whole seconds of the run are split in thirds (before,
// overload, after; after takes any remainder).
package overload
