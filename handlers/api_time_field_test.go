package handlers_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// A run_at or a freeze's until that is not RFC 3339 is 422 with the field
// (contract §9), in words a person reads. Before: 400 with Go's layout
// string ("2006-01-02T15:04:05Z07:00") and no field.
func TestTimeFieldsThatAreNotRFC3339Are422(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, v := range []string{`"tomorrow"`, `"2030-01-02 10:00"`, `"2030-01-02"`, `12345`} {
		for _, c := range []struct{ path, token, body, field string }{
			{"/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop","run_at":` + v + `}`, "run_at"},
			{"/api/v1/freezes", b.bobToken, `{"environment":"production","reason":"release day","until":` + v + `}`, "until"},
		} {
			r := b.api(t, http.MethodPost, c.path, c.token, c.body, nil)
			require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s %s: %s", c.path, v, r.raw)
			code, field := errCode(r)
			require.Equal(t, "invalid", code)
			require.Equal(t, c.field, field, r.raw)
			require.NotContains(t, r.raw, "2006", "no Go layout string")
			require.Contains(t, r.raw, "RFC 3339", r.raw)
		}
	}
}
