package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/throttledhq/throttled/api"
)

func ExampleValidateConfig() {
	cfg := api.Config{
		Tiers: map[string]api.Tier{
			"free": {Rate: 10, Period: api.Duration(time.Second), Beta: 1.5},
		},
	}
	fmt.Println(api.ValidateConfig(cfg))
	// Output: api: tiers.free.beta: 1.5: want a number in (0, 1), or 0 for the default
}

func ExampleDuration() {
	var t api.Tier
	err := json.Unmarshal([]byte(`{"rate": 5, "period": "250ms"}`), &t)
	fmt.Println(t.Period.D(), err)
	err = json.Unmarshal([]byte(`{"rate": 5, "period": "-1s"}`), &t)
	fmt.Println(err)
	// Output:
	// 250ms <nil>
	// api: duration "-1s" must not be negative
}

// An embedded admin API on the in-memory store: writes need a write token
// and, for existing resources, If-Match.
func ExampleNew() {
	srv, err := api.New(context.Background(), api.Settings{
		Tokens: map[string]api.Token{"ops": {Token: "0123456789abcdef", Role: api.RoleWrite}},
		Initial: api.Config{Tiers: map[string]api.Tier{
			"free": {Rate: 10, Period: api.Duration(time.Second)},
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
