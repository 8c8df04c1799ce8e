package admin

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPI is the OpenAPI 3 document of the API, kept in admin/openapi.json.
// Tests check that it lists exactly the registered routes and that its
// schemas of tiers, rules and pins state exactly the bounds validation
// applies (policy.Bound, as Bound.Schema publishes them).
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns a copy of the OpenAPI 3 document.
func OpenAPI() []byte { return append([]byte{}, openAPI...) }

func (sv *Server) getOpenAPI(c echo.Context) error {
	c.Response().Header().Set("ETag", etagOf(string(openAPI), 0))
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPI)
}
