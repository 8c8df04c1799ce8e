package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/throttledhq/throttled/admin"
	"github.com/throttledhq/throttled/policy"
)

// An embedded admin API on the in-memory store: writes need a write token
// and, for existing resources, If-Match.
func ExampleNew() {
	srv, err := admin.New(context.Background(), admin.Settings{
		Tokens: map[string]admin.Token{"ops": {Token: "0123456789abcdef", Role: admin.RoleWrite}},
		Initial: policy.Config{Tiers: map[string]policy.Tier{
			"free": {Rate: 10, Period: policy.Duration(time.Second)},
		}},
	})
	if err != nil {
		panic(err)
	}
	do := func(method, path, body, ifMatch string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer 0123456789abcdef")
		if ifMatch != "" {
			r.Header.Set("If-Match", ifMatch)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w
	}
	get := do(http.MethodGet, "/v1/tiers/free", "", "")
	fmt.Print(get.Code, " ", get.Body)
	put := do(http.MethodPut, "/v1/tiers/free", `{"rate": 20, "period": "1s"}`, "")
	fmt.Print(put.Code, " ", put.Body)
	put = do(http.MethodPut, "/v1/tiers/free", `{"rate": -20, "period": "1s"}`, get.Header().Get("ETag"))
	fmt.Print(put.Code, " ", put.Body)
	put = do(http.MethodPut, "/v1/tiers/free", `{"rate": 20, "period": "1s"}`, get.Header().Get("ETag"))
	fmt.Print(put.Code, " ", put.Body)
	// Output:
	// 200 {"name":"free","rate":10,"period":"1s","priority":0}
	// 428 {"error":"If-Match is required: GET the resource and send its ETag","field":"If-Match"}
	// 400 {"error":"tiers.free.rate: -20: want 1..1000000000000","field":"tiers.free.rate"}
	// 200 {"name":"free","rate":20,"period":"1s","priority":0}
}
