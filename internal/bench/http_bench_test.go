package bench

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/throttledhq/throttled/internal/overload"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// nopWriter keeps one header map, so that the benchmark measures the
// handler rather than a recorder. It writes strings as they are
// (io.StringWriter), as net/http's writer does: the hello world's
// io.WriteString then copies its text to a []byte only behind a wrapper
// that lacks WriteString, as it does on the wire.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header               { return w.h }
func (w *nopWriter) Write(b []byte) (int, error)       { return len(b), nil }
func (w *nopWriter) WriteString(s string) (int, error) { return len(s), nil }
func (w *nopWriter) WriteHeader(int)                   {}

// BenchmarkModes is each in-memory mode of bench http (the hello world
// without limiting, the middleware with each header set, the peers) in
// process, without sockets: per request over 1,000 keys, what the
// middleware costs on top of the hello world. cpu-ns/op is the process's
// CPU time (getrusage: the garbage collector's included) per request,
// which other work on a shared machine disturbs less than ns/op.
func BenchmarkModes(b *testing.B) {
	reqs := make([]*http.Request, 1000)
	for i := range reqs {
		reqs[i] = httptest.NewRequest("GET", "/hello", nil)
		reqs[i].RemoteAddr = "127.0.0.1:54321"
		reqs[i].Header.Set("X-API-Key", "k"+strconv.Itoa(i))
	}
	for _, m := range []string{"none", "memory", "memory-ietf", "memory-legacy", "memory-none", peerXRate, peerEcho} {
		h, err := Handler(m, nil, redisstore.Settings{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(m, func(b *testing.B) {
			w := &nopWriter{h: http.Header{}}
			b.ReportAllocs()
			cpu, n := overload.CPUTime(), 0
			for i := 0; b.Loop(); i++ {
				clear(w.h)
				h.ServeHTTP(w, reqs[i%len(reqs)])
				n++
			}
			b.ReportMetric(float64((overload.CPUTime()-cpu).Nanoseconds())/float64(n), "cpu-ns/op")
		})
	}
}
