// Package bench is the harness of `throttled bench` and `throttled demo`;
// the command line keeps only their flags, output and exit codes.
//
//   - bench decisions: Decisions loads a limiter.Store from many
//     goroutines; RedisBytesPerKey measures a Redis store's memory per key.
//   - bench http: Handler is the hello world behind each mode (throttled's
//     middleware on the memory, Redis or leased store; the peers xrate,
//     echo and naive-redis; the wait control); Round measures the modes
//     over loopback, ServeModes serves them for a load generator outside
//     the process (addresses from AddrPlus).
//   - bench overload and demo: StartStack puts the real throttled, built
//     with throttled.New and served on listeners of its own, in front of
//     an overload backend (an overload.Stack), behind the front the run
//     asks for: the sidecar proxy, the net/http middleware or Echo.
//
// Every key the benches write into Redis starts with Prefix.
package bench
