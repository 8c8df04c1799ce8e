package adminclient

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
)

// serveAdmin runs a real admin API (embedded store; tiers free and
// premium) and returns a client of it.
func serveAdmin(t *testing.T) *Client {
	t.Helper()
	s, err := throttled.New(context.Background(), configtest.Serve(t, "", ""), throttled.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	hs := httptest.NewServer(s.AdminHandler())
	t.Cleanup(hs.Close)
	return &Client{URL: hs.URL, Token: testenv.WriteToken}
}

func get(t *testing.T, c *Client, path string) (int, string) {
	t.Helper()
	resp, body := testenv.Call(t, "GET", c.URL+path, "", "Authorization", "Bearer "+c.Token)
	return resp.StatusCode, body
}

// A pin in force is replaced only over its ETag (a bare PUT is 428); Pin
// fetches it, so pinning twice works.
func TestPinReplacesPinInForce(t *testing.T) {
	c := serveAdmin(t)
	ctx := context.Background()
	if _, err := c.Pin(ctx, "free", 0.5, time.Minute); err != nil {
		t.Fatal(err)
	}
	resp, _ := testenv.Call(t, "PUT", c.URL+"/v1/multipliers/free/pin", `{"multiplier":1,"ttl":"1m"}`,
		"Authorization", "Bearer "+c.Token)
	if resp.StatusCode != 428 {
		t.Fatalf("bare PUT over a pin: %d, want 428 (the reason for the client)", resp.StatusCode)
	}
	res, err := c.Pin(ctx, "free", 1, 5*time.Minute)
	if err != nil || res.Status != 200 {
		t.Fatalf("Pin over a pin in force: %+v %v, want 200", res, err)
	}
	if code, body := get(t, c, "/v1/multipliers/free/pin"); code != 200 || !strings.Contains(body, `"multiplier":1`) {
		t.Fatalf("pin now: %d %s, want multiplier 1", code, body)
	}
}

// Unpin removes a pin over its ETag; a tier not pinned is ErrNotFound.
func TestUnpin(t *testing.T) {
	c := serveAdmin(t)
	ctx := context.Background()
	if _, err := c.Pin(ctx, "free", 0.5, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Unpin(ctx, "free"); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, c, "/v1/multipliers/free/pin"); code != 404 {
		t.Fatalf("pin after Unpin: %d, want 404", code)
	}
	if _, err := c.Unpin(ctx, "free"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "not pinned") {
		t.Fatalf("Unpin of no pin: %v, want ErrNotFound saying not pinned", err)
	}
}

// SetTier changes the given fields and keeps the others; an unknown tier
// is created from the fields.
func TestSetTierKeepsOtherFields(t *testing.T) {
	c := serveAdmin(t)
	ctx := context.Background()
	if _, err := c.SetTier(ctx, "free", map[string]any{"rate": 9}); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, c, "/v1/tiers/free"); !strings.Contains(body, `"rate":9`) || !strings.Contains(body, `"period":"1m`) ||
		!strings.Contains(body, `"priority":1`) {
		t.Fatalf("free after SetTier rate 9: %s, want rate 9 with period 1m and priority 1 kept", body)
	}
	res, err := c.SetTier(ctx, "gold", map[string]any{"rate": 3, "period": "1s", "priority": 2})
	if err != nil || res.Status != 201 {
		t.Fatalf("SetTier of a new tier: %+v %v, want 201", res, err)
	}
}

// A write that finds the resource changed since its read (412) reads and
// writes once more; changed again, it gives up with ErrChanged.
func TestRetriesOnceWhenChanged(t *testing.T) {
	c := serveAdmin(t)
	ctx := context.Background()
	if _, err := c.Pin(ctx, "free", 0.5, time.Minute); err != nil {
		t.Fatal(err)
	}
	other := func(m string) {
		resp, body := testenv.Call(t, "PUT", c.URL+"/v1/multipliers/free/pin", `{"multiplier":`+m+`,"ttl":"1m"}`,
			"Authorization", "Bearer "+c.Token, "If-Match", "*")
		if resp.StatusCode != 200 {
			t.Fatalf("the other writer: %d %s", resp.StatusCode, body)
		}
	}
	reads := 0
	c.afterRead = func() {
		if reads++; reads == 1 {
			other("0.3")
		}
	}
	if _, err := c.Pin(ctx, "free", 1, time.Minute); err != nil || reads != 2 {
		t.Fatalf("Pin changed once meanwhile: %v after %d reads, want success after 2", err, reads)
	}
	c.afterRead = func() { other("0.2") }
	if _, err := c.Pin(ctx, "free", 1, time.Minute); !errors.Is(err, ErrChanged) {
		t.Fatalf("Pin changed at every read: %v, want ErrChanged", err)
	}
	if _, body := get(t, c, "/v1/multipliers/free/pin"); !strings.Contains(body, `"multiplier":0.2`) {
		t.Fatalf("pin after giving up: %s, want the other writer's 0.2", body)
	}
}

// The command reads the URL and token from THROTTLED_ADMIN_URL and
// THROTTLED_ADMIN_TOKEN; --url and --token override them.
func TestCommand(t *testing.T) {
	c := serveAdmin(t)
	env := []string{"THROTTLED_ADMIN_URL=" + c.URL, "THROTTLED_ADMIN_TOKEN=" + c.Token}
	var out bytes.Buffer
	for _, args := range [][]string{{"pin", "free", "1", "--ttl", "5m"}, {"pin", "free", "0.5"},
		{"tier", "set", "free", "--rate", "9", "--burst", "9"}, {"unpin", "free"}} {
		if err := Command(args, env, &out); err != nil {
			t.Fatalf("admin %v: %v", args, err)
		}
	}
	if _, body := get(t, c, "/v1/tiers/free"); !strings.Contains(body, `"rate":9`) || !strings.Contains(body, `"burst":9`) {
		t.Fatalf("free: %s, want rate and burst 9", body)
	}
	if err := Command([]string{"unpin", "free", "--url", "http://127.0.0.1:1"}, env, &out); err == nil ||
		!strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("--url did not override THROTTLED_ADMIN_URL: %v", err)
	}
	for _, args := range [][]string{{"pin", "free"}, {"pin", "free", "half"}, {"tier", "set", "free"}, {"tier", "set", "free", "--rate", "x"}, {"nope"}} {
		if err := Command(args, env, &out); !errors.Is(err, ErrUsage) {
			t.Errorf("admin %v: %v, want ErrUsage", args, err)
		}
	}
	if err := Command([]string{"unpin", "free"}, env[:1], &out); err == nil || !strings.Contains(err.Error(), "THROTTLED_ADMIN_TOKEN") {
		t.Fatalf("without a token: %v, want an error naming THROTTLED_ADMIN_TOKEN", err)
	}
}
