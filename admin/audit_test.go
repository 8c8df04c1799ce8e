package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/policy"
)

type auditedWrite struct {
	method, path, body, action, resource string
	before, after                        bool
}

// auditedWrites touch every kind of resource; before says whether the
// resource exists (and so needs If-Match), after whether it will.
func auditedWrites() []auditedWrite {
	return []auditedWrite{
		{"POST", "/v1/tiers", `{"name":"gold","rate":5,"period":"1s"}`, "tier.create", "tiers/gold", false, true},
		{"PUT", "/v1/tiers/free", `{"rate":11,"period":"1s"}`, "tier.replace", "tiers/free", true, true},
		{"PUT", "/v1/keys/k9", `{"tier":"gold"}`, "key.assign", "keys/k9", false, true},
		{"PUT", "/v1/rules", `{"rules":[]}`, "rules.replace", "rules", true, true},
		{"POST", "/v1/multipliers/gold/pin", `{"multiplier":0.5,"ttl":"1m"}`, "pin.set", "pins/gold", false, true},
		{"DELETE", "/v1/multipliers/gold/pin", ``, "pin.delete", "pins/gold", true, false},
		{"DELETE", "/v1/keys/k9", ``, "key.unassign", "keys/k9", true, false},
		{"DELETE", "/v1/tiers/gold", ``, "tier.delete", "tiers/gold", true, false},
	}
}

func TestAuditEntries(t *testing.T) {
	f := newFixture(t)
	f.clock.Add(time.Second)
	writes := auditedWrites()
	for _, w := range writes {
		var r resp
		if w.before { // the resource exists: If-Match is needed
			r = f.do(w.method, w.path, writeTok, w.body, "If-Match", "*")
		} else {
			r = f.do(w.method, w.path, writeTok, w.body)
		}
		if r.code >= 300 {
			t.Fatalf("%s %s: %d %s", w.method, w.path, r.code, r.body)
		}
	}
	r := f.do("GET", "/v1/audit", readTok, nil)
	want(t, r, 200)
	var l struct{ Entries []policy.AuditEntry }
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != len(writes)+1 || l.Entries[len(writes)].Action != "config.seed" {
		t.Fatalf("%d entries: %s", len(l.Entries), r.body)
	}
	for i, w := range writes {
		e := l.Entries[len(writes)-1-i] // newest first
		if e.Who != "alice" || e.Action != w.action || e.Resource != w.resource || !e.At.Equal(t0.Add(time.Second)) || e.Version != int64(i+2) {
			t.Errorf("%s: %+v", w.action, e)
		}
		if (string(e.Before) != "null") != w.before || (string(e.After) != "null") != w.after {
			t.Errorf("%s: before %s after %s", w.action, e.Before, e.After)
		}
	}
	if e := l.Entries[len(writes)-2]; string(e.Before) != `{"name":"free","rate":10,"period":"1s","burst":20,"priority":10,"beta":0.5}` ||
		string(e.After) != `{"name":"free","rate":11,"period":"1s","priority":0}` {
		t.Errorf("replace: before %s after %s", e.Before, e.After)
	}
	r = f.do("GET", "/v1/audit?limit=2", readTok, nil)
	if err := json.Unmarshal(r.body, &l); err != nil || len(l.Entries) != 2 || l.Entries[0].Action != "tier.delete" {
		t.Fatalf("limit=2: %s", r.body)
	}
}

// The audit log keeps only the newest AuditLimit entries.
func TestAuditBounded(t *testing.T) {
	f := newFixture(t)
	st, err := policy.NewRedisStore(f.rc, policy.StoreSettings{Prefix: "small:", AuditLimit: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, hs := f.start(func(s *Settings) { s.Store = st })
	for i := range 5 {
		r := doURL(t, hs.URL, "PUT", "/v1/tiers/free", writeTok, map[string]any{"rate": 20 + i, "period": "1s"}, "If-Match", "*")
		want(t, r, http.StatusOK)
	}
	if n := f.rc.LLen(context.Background(), "small:{config}:audit").Val(); n != 3 {
		t.Fatalf("%d entries kept, want 3", n)
	}
	raw, _ := st.Audit(context.Background(), 10)
	var newest policy.AuditEntry
	if err := json.Unmarshal(raw[0], &newest); err != nil || len(raw) != 3 || string(newest.After) != `{"name":"free","rate":24,"period":"1s","priority":0}` {
		t.Fatalf("%d entries, newest %s (%v)", len(raw), raw[0], err)
	}
}

// TestAuditBoundedInBytes: an entry for a write near the body limit is
// stored within MaxAuditEntryBytes, keeping who, what and the version and
// the sizes of before and after.
func TestAuditBoundedInBytes(t *testing.T) {
	f := newFixture(t)
	rules := make([]policy.Rule, 500)
	for i := range rules {
		rules[i] = policy.Rule{Name: fmt.Sprintf("r%d", i), Match: policy.Match{Path: "/" + strings.Repeat("p", 1000)}, Key: policy.KeySources{"ip"}}
	}
	body := mustJSON(ruleList{Rules: rules})
	if len(body) < 400<<10 || len(body) > DefaultMaxBodyBytes {
		t.Fatalf("body of %d bytes: the test wants one near the body limit", len(body))
	}
	want(t, f.do("PUT", "/v1/rules", writeTok, body, "If-Match", "*"), http.StatusOK)
	stored, err := f.rc.LIndex(context.Background(), "test:{config}:audit", 0).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) > policy.DefaultMaxAuditEntryBytes {
		t.Fatalf("audit entry of %d bytes stored, want at most %d", len(stored), policy.DefaultMaxAuditEntryBytes)
	}
	var e struct {
		Who, Action string
		Version     int64
		After       struct {
			Omitted bool
			Bytes   int
		}
	}
	if err := json.Unmarshal(stored, &e); err != nil {
		t.Fatal(err)
	}
	if e.Who != "alice" || e.Action != "rules.replace" || e.Version != 2 || !e.After.Omitted || e.After.Bytes < len(body)-100 {
		t.Fatalf("audit entry %s", stored)
	}
}
