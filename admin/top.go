package admin

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/policy"
)

// Consumer is one of the clients refused most lately, for GET /v1/top.
type Consumer struct {
	// Key is the client key as the enforcer counts it: "ip:<address>",
	// "sub:<JWT subject>" or "key:<API key fingerprint>".
	Key string `json:"key"`
	// Fingerprint is the key's label value in throttled_top_consumers.
	Fingerprint string `json:"fingerprint"`
	Refused     uint64 `json:"refused"` // estimate, never below the true count
	Error       uint64 `json:"error"`   // the most by which Refused may exceed it
}

// TopReader reports the clients refused most over its recent window, most
// refused first.
type TopReader interface {
	TopConsumers() (window policy.Duration, top []Consumer)
}

type topList struct {
	Window    policy.Duration `json:"window"`
	Consumers []Consumer      `json:"consumers"`
}

// getTop lists the clients refused most lately; ?limit=N (1..1000) keeps the
// first N. Without a TopReader the list is empty.
func (sv *Server) getTop(c echo.Context) error {
	n := 1000
	if q := c.QueryParam("limit"); q != "" {
		v, err := strconv.Atoi(q)
		if err != nil || v < 1 || v > 1000 {
			return fieldErr("limit", "%q: want an integer in 1..1000", clip([]byte(q)))
		}
		n = v
	}
	list := topList{Consumers: []Consumer{}}
	if sv.s.Top != nil {
		w, top := sv.s.Top.TopConsumers()
		list.Window = w
		list.Consumers = append(list.Consumers, top[:min(n, len(top))]...)
	}
	return c.JSON(http.StatusOK, list)
}
