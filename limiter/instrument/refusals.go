package instrument

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultRefusalLogRate is the lines per second of a RefusalLog given 0.
const DefaultRefusalLogRate = 5

// RefusalLog writes a sampled log line at info level for refused requests:
// at most Rate lines per second, the rest suppressed and counted. A line
// names the rule, the tier, the reason and the client by fingerprint (see
// Fingerprint), never by its key, subject, token or IP, and says how many
// lines were suppressed since the previous one.
//
// It is safe for concurrent use; mu guards the fields below it.
type RefusalLog struct {
	log  *slog.Logger
	rate int
	now  func() time.Time

	mu         sync.Mutex
	second     int64 // the Unix second the count is of
	n          int   // lines written in second
	suppressed uint64
}

// NewRefusalLog returns a RefusalLog writing to log at most rate lines a
// second (0 means DefaultRefusalLogRate) on clock now (nil: time.Now).
func NewRefusalLog(log *slog.Logger, rate int, now func() time.Time) *RefusalLog {
	if rate <= 0 {
		rate = DefaultRefusalLogRate
	}
	if now == nil {
		now = time.Now
	}
	return &RefusalLog{log: log, rate: rate, now: now}
}

// Refused logs one refusal, unless this second's lines are used up. client
// is the client key as the top-K counts it ("ip:…", "sub:…", "key:…"); ""
// when unknown. Only its fingerprint is written.
func (l *RefusalLog) Refused(tier, rule, reason, client string) {
	suppressed, ok := l.take(l.now())
	if !ok {
		return
	}
	attrs := make([]slog.Attr, 0, 5)
	attrs = append(attrs, slog.String("rule", rule), slog.String("tier", tier), slog.String("reason", reason))
	if client != "" {
		attrs = append(attrs, slog.String("key", Fingerprint(client)))
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Uint64("suppressed", suppressed))
	}
	l.log.LogAttrs(context.Background(), slog.LevelInfo, "request refused", attrs...)
}

// take reserves a line in the second of now and returns the lines
// suppressed since the last one written.
func (l *RefusalLog) take(now time.Time) (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := now.Unix(); s != l.second {
		l.second, l.n = s, 0
	}
	if l.n >= l.rate {
		l.suppressed++
		return 0, false
	}
	l.n++
	s := l.suppressed
	l.suppressed = 0
	return s, true
}
