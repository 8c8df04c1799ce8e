package overload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"
)

// Errors.
var (
	ErrUnknownScenario = errors.New("overload: unknown scenario")
	ErrUnknownMode     = errors.New("overload: unknown mode")
	ErrScenario        = errors.New("overload: invalid scenario")
	ErrSettings        = errors.New("overload: invalid run settings")
	ErrStack           = errors.New("overload: stack")
	ErrUnreconciled    = errors.New("overload: client and backend counts differ")
)

// Stack is the enforcement the caller put in front of the backend.
type Stack interface {
	// URLs are the instances' base URLs, one per Scenario.Instances.
	URLs() []string
	// Multipliers are the tier multipliers in effect now (tier → value);
	// nil or empty when there are none. Called every 100 ms.
	Multipliers() map[string]float64
	Close() error
}

// StackSpec is what a StackFunc must build.
type StackSpec struct {
	Scenario Scenario // its Tiers, DefaultTier and Instances
	Mode     Mode
	Front    Front
	Backend  string        // the backend's base URL
	Target   time.Duration // the latency target
	// Handler is the backend's own handler, for the fronts that serve it
	// in process: the same workers, service time, queue and counts as
	// the backend's listener at Backend.
	Handler http.Handler
}

// StackFunc starts the stack; ctx is the run's.
type StackFunc func(ctx context.Context, spec StackSpec) (Stack, error)

// RunSettings configure Run. Zero values mean the defaults.
type RunSettings struct {
	// Duration is the run's length in whole seconds, at least 3; default 30 s.
	Duration time.Duration
	// Target is the latency target; default 250 ms.
	Target time.Duration
	Mode   Mode
	Front  Front
	// Stack starts the stack; required.
	Stack StackFunc
	// Backend configures the backend; its capacity must be the scenario's.
	Backend BackendSettings
	// MaxInFlight bounds the requests in flight; default 2000.
	MaxInFlight int
	// Timeout bounds one request; default 5 s.
	Timeout time.Duration
	// Jitter moves each request off its even spacing by up to ±Jitter/2
	// of the interval; default 0.1, negative for none, at most 1.
	Jitter float64
	// OnRow, if set, gets each second once it is finished, in order, from
	// one goroutine (about half a second after the second ends).
	OnRow func(Row)
}

func (rs RunSettings) withDefaults() RunSettings {
	if rs.Duration == 0 {
		rs.Duration = 30 * time.Second
	}
	if rs.Target <= 0 {
		rs.Target = 250 * time.Millisecond
	}
	if rs.MaxInFlight <= 0 {
		rs.MaxInFlight = 2000
	}
	if rs.Timeout <= 0 {
		rs.Timeout = 5 * time.Second
	}
	switch {
	case rs.Jitter == 0:
		rs.Jitter = 0.1
	case rs.Jitter < 0:
		rs.Jitter = 0
	}
	rs.Jitter = min(rs.Jitter, 1)
	return rs
}

// Run starts a backend, the caller's stack in front of it and the
// scenario's clients, and reports on them. If ctx ends first, the report
// covers the seconds begun so far and the error wraps ctx.Err(). If the
// clients' 2xx or backend 503s differ from the backend's counts by more
// than 1 % and the requests that failed on the clients (see Reconcile),
// the report comes with an error wrapping ErrUnreconciled.
func Run(ctx context.Context, sc Scenario, rs RunSettings) (Report, error) {
	rs = rs.withDefaults()
	if rs.Stack == nil || rs.Duration < 3*time.Second {
		return Report{}, fmt.Errorf("%w: want a Stack and a Duration of at least 3s", ErrSettings)
	}
	if err := sc.validate(); err != nil {
		return Report{}, err
	}
	if err := checkBurn(sc); err != nil {
		return Report{}, err
	}
	b, err := NewBackend(rs.Backend)
	if err != nil {
		return Report{}, err
	}
	defer b.Close()
	if c := b.Capacity(); math.Abs(c-sc.Capacity) > 1e-6*c {
		return Report{}, fmt.Errorf("%w: scenario %q is for capacity %v, the backend has %v", ErrScenario, sc.Name, sc.Capacity, c)
	}
	st, err := rs.Stack(ctx, StackSpec{Scenario: sc, Mode: rs.Mode, Front: rs.Front,
		Backend: b.URL(), Target: rs.Target, Handler: b.Handler()})
	if err != nil {
		return Report{}, fmt.Errorf("%w: %w", ErrStack, err)
	}
	defer st.Close()
	if n := len(st.URLs()); n != sc.Instances {
		return Report{}, fmt.Errorf("%w: %d URLs for %d instances", ErrStack, n, sc.Instances)
	}
	return run(ctx, sc, rs, b, st)
}

// run drives one started backend and stack.
func run(ctx context.Context, sc Scenario, rs RunSettings, b *Backend, st Stack) (Report, error) {
	lay := newLayout(rs.Duration)
	col := newCollector(sc, lay, rs.Target)
	pr := &probe{}
	gen := newGenerator(st.URLs(), sc.Split, col, lay, rs)
	fl, _ := st.(Fleet)
	cpu0 := CPUTime()
	gen.start = time.Now()
	if fl != nil {
		gen.pick = fl.Pick
		fl.Begin(gen.start, time.Duration(lay.seconds)*time.Second)
	}
	runCtx, stop := context.WithTimeout(ctx, time.Duration(lay.seconds)*time.Second)
	defer stop()
	go slowdown(runCtx, b, sc, lay, gen.start)
	go burn(runCtx, sc, lay, gen.start)
	loopDone := make(chan struct{})
	go func() { watch(runCtx, gen.start, st, pr, col, rs.OnRow, lay.seconds); close(loopDone) }()
	drivers := make(chan struct{}, len(sc.Loads))
	for i, l := range sc.Loads {
		go func() { gen.drive(ctx, i, l); drivers <- struct{}{} }()
	}
	for range sc.Loads {
		<-drivers
	}
	kept, early := lay.seconds, ctx.Err()
	if early != nil {
		kept = min(kept, int(math.Ceil(time.Since(gen.start).Seconds())))
	}
	stop()
	gen.wg.Wait()
	<-loopDone
	for i := range col.due {
		col.due[i].Store(math.MaxInt64)
	}
	emit(col.finished(kept, pr.at), rs.OnRow)
	rep := summarize(sc, rs.Mode, rs.Target, lay, col.rows[:kept], pr.all())
	rep.Front = rs.Front.String()
	rep.CPUSeconds = round((CPUTime() - cpu0).Seconds(), 2)
	counts := b.Counts()
	if fl != nil {
		rep.Fleet = fl.FleetReport(&rep)
		own := fl.BackendCounts()
		counts.OK, counts.Overloaded, counts.Abandoned = counts.OK+own.OK, counts.Overloaded+own.Overloaded, counts.Abandoned+own.Abandoned
	}
	if early != nil {
		return rep, fmt.Errorf("overload: run ended early: %w", early)
	}
	return rep, Reconcile(rep.Totals, counts)
}

// watch samples the multipliers and hands out finished rows every 100 ms
// until ctx ends.
func watch(ctx context.Context, start time.Time, st Stack, pr *probe, col *collector, onRow func(Row), limit int) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		pr.record(time.Since(start), st.Multipliers())
		emit(col.finished(limit, pr.at), onRow)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func emit(rows []Row, onRow func(Row)) {
	if onRow == nil {
		return
	}
	for _, r := range rows {
		onRow(r)
	}
}

// slowdown sets the backend's service time at each phase's start.
func slowdown(ctx context.Context, b *Backend, sc Scenario, lay layout, start time.Time) {
	nominal := b.ServiceTime()
	for p := range NumPhases {
		at := start.Add(time.Duration(lay.start(p)) * time.Second)
		t := time.NewTimer(time.Until(at))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		b.SetServiceTime(time.Duration(float64(nominal) * sc.ServiceFactor[p]))
	}
}

// Reconcile compares the clients' totals with the backend's counts: the
// 2xx with the backend's 200s, the Backend503 with its overloaded 503s.
// Each pair must agree within 1 % of the larger, except that the backend
// may have answered requests that failed on their clients (a client's
// timeout, an instance killed mid-call): each failed request accounts
// for at most one answer the clients did not see, a 200 or a 503. Else
// ErrUnreconciled.
func Reconcile(totals map[string]Counts, b BackendCounts) error {
	var ok, over, failed int64
	for _, c := range totals {
		ok += c.Class[OK]
		over += c.Class[Backend503]
		failed += c.Class[Failed]
	}
	spare := float64(failed) // failed requests not yet matched with an unseen answer
	for _, p := range []struct {
		what           string
		client, server int64
	}{{"2xx", ok, b.OK}, {"backend 503s", over, b.Overloaded}} {
		tol := 0.01 * float64(max(p.client, p.server))
		d := float64(p.client - p.server)
		unseen := max(0, -d-tol) // answers beyond the tolerance the clients did not see
		if d > tol || unseen > spare {
			return fmt.Errorf("%w: %s: clients %d, backend %d (%d requests failed or timed out on the clients)",
				ErrUnreconciled, p.what, p.client, p.server, failed)
		}
		spare -= unseen
	}
	return nil
}
