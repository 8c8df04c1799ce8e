package overload

import (
	"net/http"
	"testing"
	"time"
)

func BenchmarkHistogramObserve(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Observe(time.Duration(i%500) * time.Millisecond)
	}
}

func BenchmarkCollectorFinish(b *testing.B) {
	sc := Scenarios(400)["surge"]
	c := newCollector(sc, newLayout(3*time.Second), 250*time.Millisecond)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.begin(1)
		c.finish(1, "free", OK, time.Duration(i%300)*time.Millisecond)
	}
}

func BenchmarkClassifyShed(b *testing.B) {
	body := []byte(`{"error":"service overloaded, retry later","reason":"shed","retry_after_seconds":2,"tier":"free","rule":"per-key"}`)
	h := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		Classify(503, h, body)
	}
}
