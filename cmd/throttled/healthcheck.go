package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// defaultHealthURL is the readiness probe of the default admin listener
// as a container sees it (admin.listen 0.0.0.0:9090 in deploy/).
const defaultHealthURL = "http://127.0.0.1:9090/readyz"

// healthcheck is `throttled healthcheck`: one GET of a probe (the local
// /readyz by default), exit 0 on a 2xx answer, 1 otherwise. Distroless
// images have no shell and no curl, so the Dockerfile's HEALTHCHECK, the
// compose healthcheck and exec probes run this.
func healthcheck(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("url", defaultHealthURL, "probe URL: /readyz (serving) or /healthz (alive) on the admin listener")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	insecure := fs.Bool("insecure", false, "accept any TLS certificate (admin.tls with a self-signed one)")
	quiet := fs.Bool("quiet", false, "print nothing on success")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("healthcheck: unexpected arguments %q", fs.Args())
	}
	u, err := url.Parse(*target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("healthcheck: --url %q: want an http:// or https:// URL with a host", *target)
	}
	if *timeout <= 0 {
		return fmt.Errorf("healthcheck: --timeout %s: want a positive duration", *timeout)
	}
	code, err := probe(u.String(), *timeout, *insecure)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	if !*quiet {
		_, err = fmt.Fprintf(stdout, "healthcheck: %s: %d\n", u.Redacted(), code)
	}
	return err
}

// errUnhealthy reports a probe that answered, but not 2xx.
var errUnhealthy = errors.New("unhealthy")

// probe GETs target once and returns its status code; an answer other
// than 2xx is errUnhealthy.
func probe(target string, timeout time.Duration, insecure bool) (int, error) {
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	if insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // operator's choice, loopback probe
	}
	c := &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("%w: GET %s: %s %s", errUnhealthy, target, resp.Status, body)
	}
	return resp.StatusCode, nil
}
