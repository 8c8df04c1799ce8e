// Package adminclient is the admin API's client for the writes operators
// make in an incident (pin and unpin a tier's multiplier, set a tier's
// fields), and the `throttled admin` command that runs them. Every write
// to an existing resource needs its ETag in If-Match (428 without it):
// the client reads the resource first, writes over the ETag it read, and
// when someone changed it in between (412) reads and writes once more.
package adminclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ErrChanged is returned when the resource changed between the read and
// the write twice in a row: someone else is writing it; nothing was
// written.
var ErrChanged = errors.New("adminclient: the resource changed while writing it, twice; nothing written")

// ErrNotFound is wrapped by the error of a read or write of a resource the
// admin API does not have (an unknown tier, no pin).
var ErrNotFound = errors.New("adminclient: not found")

// Client talks to one admin API.
type Client struct {
	// URL is the admin listener's base URL, e.g. http://127.0.0.1:9090.
	URL string
	// Token is a bearer token with the write role.
	Token string
	// HTTP sends the requests. Zero: a client with a 10 s timeout.
	HTTP *http.Client

	afterRead func() // tests: runs between the read and the write
}

// Result is a write's answer: its status and JSON body.
type Result struct {
	Status int
	Body   []byte
}

// APIError is an answer outside 2xx.
type APIError struct {
	Method, Path string
	Status       int
	Message      string // the API's "error", or the body
}

func (e *APIError) Error() string {
	return fmt.Sprintf("adminclient: %s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

// Unwrap makes a 404 an ErrNotFound.
func (e *APIError) Unwrap() error {
	if e.Status == http.StatusNotFound {
		return ErrNotFound
	}
	return nil
}

// Pin sets tier's multiplier for ttl, replacing a pin in force.
func (c *Client) Pin(ctx context.Context, tier string, multiplier float64, ttl time.Duration) (Result, error) {
	body, err := json.Marshal(map[string]any{"multiplier": multiplier, "ttl": ttl.String()})
	if err != nil {
		return Result{}, err
	}
	return c.conditional(ctx, "PUT", pinPath(tier), func([]byte) ([]byte, string, string, error) {
		return body, "PUT", pinPath(tier), nil
	}, true)
}

// Unpin removes tier's pin (the controller's multiplier is in force again).
func (c *Client) Unpin(ctx context.Context, tier string) (Result, error) {
	return c.conditional(ctx, "DELETE", pinPath(tier), func([]byte) ([]byte, string, string, error) {
		return nil, "DELETE", pinPath(tier), nil
	}, false)
}

// SetTier changes the given fields of tier name (JSON names: rate, period,
// burst, priority, …) and keeps the others; a tier that does not exist is
// created from the fields.
func (c *Client) SetTier(ctx context.Context, name string, fields map[string]any) (Result, error) {
	path := "/v1/tiers/" + name
	return c.conditional(ctx, "PUT", path, func(cur []byte) ([]byte, string, string, error) {
		if cur == nil {
			b, err := json.Marshal(merge(map[string]any{"name": name}, fields))
			return b, "POST", "/v1/tiers", err
		}
		var t map[string]any
		if err := json.Unmarshal(cur, &t); err != nil {
			return nil, "", "", fmt.Errorf("adminclient: GET %s: %w", path, err)
		}
		b, err := json.Marshal(merge(t, fields))
		return b, "PUT", path, err
	}, true)
}

func merge(into, from map[string]any) map[string]any {
	for k, v := range from {
		into[k] = v
	}
	return into
}

func pinPath(tier string) string { return "/v1/multipliers/" + tier + "/pin" }

// write builds a write from the resource's current body (nil: absent).
type write func(cur []byte) (body []byte, method, path string, err error)

// conditional reads path, then writes over the ETag it read; a 412 (it
// changed meanwhile) is retried once with a fresh read. absentOK says
// whether the write may go on when the resource does not exist.
func (c *Client) conditional(ctx context.Context, what, path string, w write, absentOK bool) (Result, error) {
	for range 2 {
		get, err := c.do(ctx, "GET", path, nil, "")
		var ae *APIError
		absent := errors.As(err, &ae) && ae.Status == http.StatusNotFound && absentOK
		if err != nil && !absent {
			return Result{}, err
		}
		cur, etag := get.Body, get.etag
		if absent {
			cur, etag = nil, ""
		}
		if c.afterRead != nil {
			c.afterRead()
		}
		body, method, wpath, err := w(cur)
		if err != nil {
			return Result{}, err
		}
		res, err := c.do(ctx, method, wpath, body, etag)
		if errors.As(err, &ae) && (ae.Status == http.StatusPreconditionFailed || ae.Status == http.StatusPreconditionRequired) {
			continue // changed (or created) between the read and the write
		}
		return res.Result, err
	}
	return Result{}, fmt.Errorf("%w (%s %s)", ErrChanged, what, path)
}

type answer struct {
	Result
	etag string
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, ifMatch string) (answer, error) {
	if c.Token == "" {
		return answer{}, errors.New("adminclient: no admin token: give --token or THROTTLED_ADMIN_TOKEN (a write token)")
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.URL, "/")+path, rd)
	if err != nil {
		return answer{}, fmt.Errorf("adminclient: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("adminclient: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return answer{}, fmt.Errorf("adminclient: %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error string }
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return answer{}, &APIError{Method: method, Path: path, Status: resp.StatusCode, Message: msg}
	}
	return answer{Result: Result{Status: resp.StatusCode, Body: b}, etag: resp.Header.Get("ETag")}, nil
}
