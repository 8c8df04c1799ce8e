package enforce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/internal/enum"
	"github.com/throttledhq/throttled/internal/wait"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/identity"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// Settings are an Enforcer's collaborators. Zero values mean the
// defaults given on each field.
type Settings struct {
	Identifier identity.Identifier // nil: NewIdentifier(IdentitySettings{})
	Tiers      TierLookup          // nil: no key is assigned
	// UnassignedKeys is what an API key without an assignment is: by
	// default anonymous (unless an identity.KeyVerifier accepted it).
	UnassignedKeys UnassignedKeys
	Multipliers    multiplier.Source // nil: always 1
	// Rates caps each tier's admitted requests per second across all
	// instances (one bucket per tier in the store); nil: no caps.
	Rates multiplier.RateSource
	// Refusals counts refused clients (a top-K); nil: not counted.
	Refusals interface{ Add(key string, n uint64) }
	// Decisions counts what each rule came to for the client, by tier,
	// rule and decision label (instrument.Metrics does): the labels of
	// limiter.DecisionLabels, LabelShadowOverQuota, LabelShadowShed,
	// LabelDelayed and a dry run's LabelDryRun*; nil: not counted. Refunds and peeks are not counted.
	Decisions interface {
		Count(tier, rule, decision string)
	}
	// RefusalLog is told of every refusal (instrument.RefusalLog samples
	// and logs them); client is the key Refusals counts, "" for a check
	// without one; nil: none.
	RefusalLog interface {
		Refused(tier, rule, reason, client string)
	}
	Now    func() time.Time                                 // nil: time.Now
	Jitter func(n int64) int64                              // uniform in [0, n); nil: math/rand/v2
	Sleep  func(ctx context.Context, d time.Duration) error // ModeDelay; nil: a timer
	// MaxWaiting bounds the requests waiting in ModeDelay at once, over all
	// keys; beyond it a delay rule refuses at once. 0 means 1024.
	MaxWaiting int
	// DryRun makes refusals observe-only (see DryRun); zero: DryRunOff.
	DryRun DryRun
}

// DryRun says which refusals an Enforcer only observes: a request that
// would be refused for a cause the dry run covers passes, with the headers
// of an admitted request (no Retry-After); its would-be refusal is counted
// in Settings.Decisions as DryRunPrefix and the reason (dry_run_shed,
// dry_run_over_quota, dry_run_delayed), is Result.DryRun, and is not told
// to Settings.Refusals nor Settings.RefusalLog. The multipliers and tier
// caps still shape each decision, so the would-be answer is the one a
// real run would give. The quota is asked first in a dry run too: under
// DryRunLoad a request over quota is 429 even when it would be shed.
type DryRun uint8

// Dry run modes.
const (
	DryRunOff DryRun = iota // refuse as the rules say (the default)
	// DryRunLoad observes the refusals for load: a rule's multiplier shed,
	// the tier admission cap, and (limiter/pipeline) the inner loop's gate.
	DryRunLoad
	// DryRunAll observes every throttling refusal: DryRunLoad's and the
	// quota's; a delay rule does not wait. Bulkheads and breakers, which
	// protect the process and the upstream, stay on.
	DryRunAll
)

var dryRunNames = enum.New[DryRun]("enforce", "dry run", "off", "load", "all")

func (d DryRun) String() string { return dryRunNames.String(d) }

// ObservesLoad reports whether refusals for load pass (DryRunLoad, DryRunAll).
func (d DryRun) ObservesLoad() bool { return d == DryRunLoad || d == DryRunAll }

// ObservesQuota reports whether refusals for quota pass (DryRunAll).
func (d DryRun) ObservesQuota() bool { return d == DryRunAll }

// DryRun is the Enforcer's dry run mode (Settings.DryRun), which the
// stages after it (limiter/pipeline's gate) follow too.
func (e *Enforcer) DryRun() DryRun { return e.set.DryRun }

// Enforcer applies a Policy to HTTP requests through a Store. It knows
// neither Echo nor net/http handlers: the adapters in http.go and echo.go
// call Check and write its Result.
type Enforcer struct {
	store  limiter.Store
	policy atomic.Pointer[compiled]
	set    Settings
	delays *delayQueue
	// pooled: the store copies the keys it keeps (limiter.KeyCopier), so
	// Check makes them in pooled memory it takes back when done.
	pooled bool
	// deferIP: the Identifier can leave the client's IP out until a rule
	// or a refusal needs it; nil: it cannot.
	deferIP ipDeferrer
	// keyHeader is deferIP's PlainKeyHeader: identify reads it itself,
	// without a call through the interface; "": none.
	keyHeader string
	// mem is the store when it is the in-memory one, nil otherwise: called
	// by its type, it takes a request by pointer (DecideRequest), which a
	// call through an interface would move to the heap.
	mem *limiter.Memory
}

// ipDeferrer is an Identifier that can resolve the client's IP apart
// (identity.New's does): IdentifyDeferIP may leave Client.IP "", which
// ClientIP then gives; when PlainKeyHeader names a header, a client is
// that header's API key (and its IP) alone.
type ipDeferrer interface {
	IdentifyDeferIP(r *http.Request) identity.Client
	ClientIP(r *http.Request) string
	PlainKeyHeader() string
}

// New validates p and returns an Enforcer deciding through store.
func New(store limiter.Store, p Policy, s Settings) (*Enforcer, error) {
	if s.Identifier == nil {
		id, err := identity.New(identity.Settings{})
		if err != nil {
			return nil, err
		}
		s.Identifier = id
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Jitter == nil {
		s.Jitter = rand.Int64N
	}
	if s.Sleep == nil {
		s.Sleep = wait.Sleep
	}
	if s.MaxWaiting == 0 {
		s.MaxWaiting = defaultMaxWaiting
	}
	if !dryRunNames.Valid(s.DryRun) {
		return nil, fmt.Errorf("enforce: Settings.DryRun: unknown mode %d (want off, load or all)", s.DryRun)
	}
	e := &Enforcer{store: store, set: s, delays: newDelayQueue(s.MaxWaiting)}
	if c, ok := store.(limiter.KeyCopier); ok && c.CopiesKeys() {
		e.pooled = true
	}
	if e.deferIP, _ = s.Identifier.(ipDeferrer); e.deferIP != nil {
		e.keyHeader = e.deferIP.PlainKeyHeader()
	}
	e.mem, _ = store.(*limiter.Memory)
	if err := e.SetPolicy(p); err != nil {
		return nil, err
	}
	return e, nil
}

// SetPolicy validates p and swaps it in whole; on error the current policy
// stays.
func (e *Enforcer) SetPolicy(p Policy) error {
	c, err := compile(&p)
	if err != nil {
		return err
	}
	e.policy.Store(c)
	return nil
}

// Result is what the Enforcer decided for one request.
type Result struct {
	Limited  bool             // at least one rule applied: rate-limit headers are due
	Allowed  bool             // false: refuse with Status
	Status   int              // 429 (over quota) or 503 (shed) when refused
	Decision limiter.Decision // the most restrictive decision (the refusing one when refused)
	Rule     string           // the rule of Decision
	Period   time.Duration
	Tier     string
	Priority int  // the tier's priority: 0 most important
	Shadowed bool // a shadow rule would have refused
	// Unlimited: a rule would have refused, but the client's tier is
	// unlimited, so it passed.
	Unlimited bool
	// Hidden: the reported Decision is of a rule that hides its headers,
	// so WriteHeaders writes none but Retry-After.
	Hidden bool
	// DryRun is the reason of the refusal a dry run let pass (over_quota,
	// delayed, shed: the first of them that applied; see DryRun); ""
	// when none. A front counts the request as DryRunPrefix+DryRun.
	DryRun string
	// RetryAfter is the Retry-After value in whole seconds (≥ 1) when
	// refused; 503s carry jitter.
	RetryAfter int64
	Err        error         // a store error; the request was let through for that rule
	at         time.Time     // when decided: X-RateLimit-Reset's epoch (zero when no legacy header is due)
	cr         *compiledRule // the rule of Decision, for its header text; nil: none of the policy's
	sc         *scratch      // the request's bucket keys, and room for its headers; nil: no key made
}

// Check decides for r against every matching rule, in order. A refusal for
// quota by one rule gives back what earlier rules took. The bucket keys are
// made in one allocation, with room for the Result's headers (see
// WriteHeaders); on a store that copies the keys it keeps
// (limiter.KeyCopier) they are made in pooled memory instead, and a
// request whose rules write no headers allocates nothing.
func (e *Enforcer) Check(ctx context.Context, r *http.Request) Result {
	var ps pass
	e.check(ctx, r, &ps)
	return ps.res
}

// check is Check deciding in ps, an empty pass its caller holds
// (Middleware on its stack, a Pass's holder in its own memory, so that the
// Result is not copied on the hot path).
func (e *Enforcer) check(ctx context.Context, r *http.Request, ps *pass) {
	p := e.policy.Load()
	ps.e, ps.res.Allowed = e, true
	var id identity.Client // identified with the first rule that matches: tier != nil
	var tier *Tier
	var m float64
	for i := range p.rules {
		cr := &p.rules[i]
		if !cr.matches(r.Method, r.URL.Path) {
			continue
		}
		if tier == nil {
			id = ps.identify(r)
			tier = p.tier(&id, e.set.Tiers, e.set.UnassignedKeys)
			m = e.multiplier(tier.Name)
			ps.res.Tier, ps.res.Priority = tier.Name, tier.Priority
			ps.res.sc = ps.scratch()
		}
		if cr.readsIP(&id) {
			ps.fillIP(&id)
		}
		key, ok := cr.key(&id, r, tier, &ps.res.sc.arena)
		if !ok {
			continue
		}
		ps.last = i == len(p.rules)-1
		if !ps.askRule(ctx, cr, tier, key, m, &id) {
			break
		}
	}
	if tier == nil { // no rule matched: the stages after the decision take it as the unmatched tier's
		ps.res.Tier, ps.res.Priority = p.unmatched.Name, p.unmatched.Priority
	}
	ps.finish(ctx, tier)
	ps.doneWith()
}

// identify is who sent r, without the IP when the Identifier can leave it
// for fillIP.
func (ps *pass) identify(r *http.Request) identity.Client {
	if ps.e.deferIP == nil {
		return ps.e.set.Identifier.Identify(r)
	}
	ps.r = r
	if h := ps.e.keyHeader; h != "" {
		if v := r.Header[h]; len(v) > 0 {
			return identity.Client{APIKey: v[0]}
		}
		return identity.Client{}
	}
	return ps.e.deferIP.IdentifyDeferIP(r)
}

// fillIP gives who the IP of the request being checked, when identify
// left it out.
func (ps *pass) fillIP(who *identity.Client) {
	if who.IP == "" && ps.r != nil {
		who.IP = ps.e.deferIP.ClientIP(ps.r)
	}
}

// multiplier is the tier's multiplier for the store. A source's 0 (or NaN,
// or a negative value) sheds the most, as limiter.MinMultiplier: passed on
// as 0 it would mean "no multiplier" (1) to the store and turn shedding off.
func (e *Enforcer) multiplier(tier string) float64 {
	if e.set.Multipliers == nil {
		return 1
	}
	if m := e.set.Multipliers.Multiplier(tier); m > 0 {
		return m
	}
	return limiter.MinMultiplier
}

// Decision labels of what a rule came to beyond limiter.DecisionLabels
// (Settings.Decisions).
const (
	LabelShadowOverQuota = "shadow_over_quota" // a shadow rule would have refused (429); the request passed
	LabelShadowShed      = "shadow_shed"       // a shadow rule would have shed (503); the request passed
	LabelDelayed         = "delayed"           // a delay rule held the request, then admitted it

	// DryRunPrefix begins the label of a refusal a dry run let pass.
	DryRunPrefix         = "dry_run_"
	LabelDryRunOverQuota = DryRunPrefix + "over_quota" // a rule would have refused (429); a dry run let it pass
	LabelDryRunShed      = DryRunPrefix + "shed"       // it would have been shed (503); a dry run let it pass
	LabelDryRunDelayed   = DryRunPrefix + "delayed"    // a delay rule would have held it; a dry run let it pass at once
)

// decide asks the store; in ModeDelay a refused request waits in line for
// capacity (see delay), and delayed says it was admitted after a refusal.
func (e *Enforcer) decide(ctx context.Context, cr *compiledRule, req *limiter.Request) (d limiter.Decision, delayed bool, err error) {
	if e.mem != nil {
		d, err = e.mem.DecideRequest(ctx, req)
	} else {
		d, err = e.store.Decide(ctx, *req)
	}
	if err != nil || d.Allowed || cr.Mode != ModeDelay {
		return d, false, err
	}
	d, err = e.delay(ctx, cr, *req, d)
	return d, err == nil && d.Allowed, err
}

// count counts what a rule came to for the client.
func (e *Enforcer) count(tier, rule, label string) {
	if e.set.Decisions != nil {
		e.set.Decisions.Count(tier, rule, label)
	}
}

// countRefusal counts a refused client for the top consumers and tells the
// refusal log. API keys are secrets and metric labels are not: an API key
// is counted by a short SHA-256 fingerprint, a JWT subject or an IP as
// itself. A nil id (a check for a whole rule) is not counted.
func (e *Enforcer) countRefusal(tier string, res *Result, id *identity.Client) {
	if e.set.Refusals == nil && e.set.RefusalLog == nil {
		return
	}
	var client string
	switch {
	case id == nil:
	case id.APIKey != "":
		sum := sha256.Sum256([]byte(id.APIKey))
		client = "key:" + hex.EncodeToString(sum[:6])
	case id.Subject != "":
		client = "sub:" + id.Subject
	default:
		client = "ip:" + id.IP
	}
	if e.set.Refusals != nil && client != "" {
		e.set.Refusals.Add(client, 1)
	}
	if e.set.RefusalLog != nil {
		e.set.RefusalLog.Refused(tier, res.Rule, res.Decision.Reason.String(), client)
	}
}

// note keeps d as the reported decision when it is the most restrictive so
// far (the least remaining, then the longest reset), a decision of a rule
// that shows its headers always before one of a rule that hides them. A
// shadow rule hides them: nobody enforces its limit, so it must not shape
// clients.
func (res *Result) note(cr *compiledRule, period time.Duration, d *limiter.Decision) {
	hide := cr.HideHeaders || cr.Mode == ModeShadow
	if res.Limited && (hide && !res.Hidden || hide == res.Hidden && tighterOrEqual(&res.Decision, d)) {
		return
	}
	res.Limited = true
	res.Decision, res.Rule, res.Period, res.Hidden, res.cr = *d, cr.Name, period, hide, cr
}

// tighterOrEqual reports whether a is at least as restrictive as b: less
// remaining, or as much and a reset at least as long.
func tighterOrEqual(a, b *limiter.Decision) bool {
	return b.Remaining > a.Remaining || b.Remaining == a.Remaining && b.ResetAfter <= a.ResetAfter
}

func (res *Result) refuse(cr *compiledRule, r limiter.Rule, d limiter.Decision) {
	res.Allowed = false
	res.Decision, res.Rule, res.Period, res.Hidden, res.cr = d, cr.Name, r.Period, cr.HideHeaders, cr
	res.Status = http.StatusTooManyRequests
	if d.Reason == limiter.Shed {
		res.Status = http.StatusServiceUnavailable
	}
}

// retryAfter is RetryAfter in whole seconds, rounded up, at least 1; a 503
// adds up to half again (at least 1 s) of jitter so shed clients do not
// return in lockstep.
func (e *Enforcer) retryAfter(res *Result) int64 {
	if res.Status == http.StatusServiceUnavailable {
		return wait.Jittered(res.Decision.RetryAfter, e.set.Jitter)
	}
	return wait.Seconds(res.Decision.RetryAfter)
}
