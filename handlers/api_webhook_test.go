package handlers_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/handlers"
	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/store"
	"flightdeck/workflow/webhook"
)

// webhookUsers adds carol (viewer of rival) and returns her token.
func webhookUsers(t *testing.T, b *testBundle) string {
	t.Helper()
	hash, err := testPasswordHash()
	require.NoError(t, err)
	_, err = b.store.UserAdd(t.Context(), store.UserAddParams{Email: "carol@rival.test", Team: "rival", Role: auth.RoleViewer, PasswordHash: hash})
	require.NoError(t, err)
	secret, h := auth.NewSecret(auth.TokenPrefix)
	require.NoError(t, b.store.TokenCreate(t.Context(), "carol@rival.test", "test", h))
	return secret
}

func TestWebhookAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	carol := webhookUsers(t, b)
	const good = `{"url":"https://93.184.216.34/hook","events":["task.completed","task.failed"]}`

	created := b.api(t, "POST", "/api/v1/webhooks", b.bobToken, good, nil)
	require.Equal(t, http.StatusCreated, created.status, created.raw)
	id := created.body["id"].(string)
	secret := created.body["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	require.Equal(t, "https://93.184.216.34/hook", created.body["url"])
	require.Equal(t, []any{"task.completed", "task.failed"}, created.body["events"])

	t.Run("ListHidesSecret", func(t *testing.T) {
		r := b.api(t, "GET", "/api/v1/webhooks", b.bobToken, "", nil)
		require.Equal(t, http.StatusOK, r.status)
		ws := r.body["webhooks"].([]any)
		require.Len(t, ws, 1)
		require.Equal(t, id, ws[0].(map[string]any)["id"])
		require.NotContains(t, r.raw, secret)
		require.NotContains(t, r.raw, "secret")
	})

	t.Run("Invalid", func(t *testing.T) {
		for _, tc := range []struct{ name, body, field string }{
			{"Loopback", `{"url":"http://127.0.0.1/x","events":["task.completed"]}`, "url"},
			{"LoopbackV6", `{"url":"http://[::1]/x","events":["task.completed"]}`, "url"},
			{"Private", `{"url":"http://10.0.0.1/x","events":["task.completed"]}`, "url"},
			{"Metadata", `{"url":"http://169.254.169.254/latest","events":["task.completed"]}`, "url"},
			{"Unspecified", `{"url":"http://0.0.0.0/x","events":["task.completed"]}`, "url"},
			{"Decimal", `{"url":"http://2130706433/x","events":["task.completed"]}`, "url"},
			{"Mapped", `{"url":"http://[::ffff:127.0.0.1]/x","events":["task.completed"]}`, "url"},
			{"Unresolvable", `{"url":"https://nowhere.invalid/x","events":["task.completed"]}`, "url"},
			{"NotHTTP", `{"url":"ftp://93.184.216.34/x","events":["task.completed"]}`, "url"},
			{"NoURL", `{"events":["task.completed"]}`, "url"},
			{"NoEvents", `{"url":"https://93.184.216.34/x","events":[]}`, "events"},
			{"UnknownEvent", `{"url":"https://93.184.216.34/x","events":["task.completed","task.exploded"]}`, "events.1"},
			{"UnknownField", `{"url":"https://93.184.216.34/x","events":["task.completed"],"secret":"mine"}`, "secret"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := b.api(t, "POST", "/api/v1/webhooks", b.bobToken, tc.body, nil)
				require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
				code, field := errCode(r)
				require.Equal(t, "invalid", code)
				require.Equal(t, tc.field, field)
			})
		}
		r := b.api(t, "POST", "/api/v1/webhooks", b.bobToken, `{"url":`, nil)
		require.Equal(t, http.StatusBadRequest, r.status)
		list := b.api(t, "GET", "/api/v1/webhooks", b.bobToken, "", nil)
		require.Len(t, list.body["webhooks"].([]any), 1, "nothing refused was stored")
	})

	t.Run("NonAdminForbidden", func(t *testing.T) {
		for _, tok := range []string{b.aliceToken, carol} {
			r := b.api(t, "POST", "/api/v1/webhooks", tok, good, nil)
			require.Equal(t, http.StatusForbidden, r.status, r.raw)
			code, _ := errCode(r)
			require.Equal(t, "forbidden", code)
			require.Equal(t, http.StatusForbidden, b.api(t, "GET", "/api/v1/webhooks", tok, "", nil).status)
		}
		// carol sees rival's webhook exists but may not touch it.
		require.Equal(t, http.StatusForbidden, b.api(t, "GET", "/api/v1/webhooks/"+id+"/deliveries", carol, "", nil).status)
		require.Equal(t, http.StatusForbidden, b.api(t, "DELETE", "/api/v1/webhooks/"+id, carol, "", nil).status)
	})

	t.Run("OtherTeamNotFound", func(t *testing.T) {
		for _, r := range []apiResp{
			b.api(t, "GET", "/api/v1/webhooks/"+id+"/deliveries", b.aliceToken, "", nil),
			b.api(t, "DELETE", "/api/v1/webhooks/"+id, b.aliceToken, "", nil),
			b.api(t, "GET", "/api/v1/webhooks/not-a-uuid/deliveries", b.bobToken, "", nil),
			b.api(t, "GET", "/api/v1/webhooks/00000000-0000-0000-0000-000000000000/deliveries", b.bobToken, "", nil),
		} {
			require.Equal(t, http.StatusNotFound, r.status, r.raw)
			code, _ := errCode(r)
			require.Equal(t, "not_found", code)
		}
	})

	t.Run("Deliveries", func(t *testing.T) {
		w, err := b.store.WebhookGet(t.Context(), []string{teamID(t, b, "rival")}, id)
		require.NoError(t, err)
		tk := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
		require.Equal(t, http.StatusAccepted, tk.status, tk.raw)
		// A delivery row as the dispatcher writes it (its own tests run it end to end).
		_, err = b.store.WebhookDeliveryEnqueue(t.Context(), []store.WebhookDeliveryParams{{ID: "msg_test1", TeamID: w.TeamID,
			WebhookID: w.ID, TaskID: tk.body["id"].(string), Seq: 1, EventType: "task.completed", URL: w.URL, Body: []byte(`{}`)}})
		require.NoError(t, err)
		r := b.api(t, "GET", "/api/v1/webhooks/"+id+"/deliveries", b.bobToken, "", nil)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		ds := r.body["deliveries"].([]any)
		require.Len(t, ds, 1)
		d := ds[0].(map[string]any)
		require.Equal(t, "msg_test1", d["id"])
		require.Equal(t, "pending", d["state"])
		require.Equal(t, "task.completed", d["event"])
		require.Equal(t, http.StatusUnprocessableEntity, b.api(t, "GET", "/api/v1/webhooks/"+id+"/deliveries?limit=0", b.bobToken, "", nil).status)
		rd := b.api(t, "POST", "/api/v1/webhooks/"+id+"/deliveries/msg_test1/redeliver", b.bobToken, "", nil)
		require.Equal(t, http.StatusAccepted, rd.status, rd.raw)
		require.Equal(t, http.StatusNotFound, b.api(t, "POST", "/api/v1/webhooks/"+id+"/deliveries/msg_nope/redeliver", b.bobToken, "", nil).status)
	})

	t.Run("Delete", func(t *testing.T) {
		r := b.api(t, "DELETE", "/api/v1/webhooks/"+id, b.bobToken, "", nil)
		require.Equal(t, http.StatusNoContent, r.status, r.raw)
		require.Equal(t, http.StatusNotFound, b.api(t, "DELETE", "/api/v1/webhooks/"+id, b.bobToken, "", nil).status)
		require.Empty(t, b.api(t, "GET", "/api/v1/webhooks", b.bobToken, "", nil).body["webhooks"])
	})
}

func teamID(t *testing.T, b *testBundle, name string) string {
	t.Helper()
	var id string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT id::text FROM teams WHERE name = $1`, name).Scan(&id))
	return id
}

func TestTaskWebhookValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct{ name, hook, field string }{
		{"Loopback", `{"url":"http://127.0.0.1:9/x","secret":"0123456789abcdefg"}`, "webhook.url"},
		{"Private", `{"url":"https://192.168.0.10/x","secret":"0123456789abcdefg"}`, "webhook.url"},
		{"Decimal", `{"url":"http://2130706433/x","secret":"0123456789abcdefg"}`, "webhook.url"},
		{"NotURL", `{"url":"not a url","secret":"0123456789abcdefg"}`, "webhook.url"},
		{"ShortSecret", `{"url":"https://93.184.216.34/x","secret":"0123456789abcde"}`, "webhook.secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop","webhook":`+tc.hook+`}`, nil)
			require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
			code, field := errCode(r)
			require.Equal(t, "invalid", code)
			require.Equal(t, tc.field, field)
		})
	}
	r := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop","webhook":{"url":"https://93.184.216.34/x","secret":"0123456789abcdef"}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	require.NotContains(t, r.raw, "0123456789abcdef", "the secret is never echoed")
}

func TestWebhookPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	res := b.login(t, c, "bob@rival.test", testPassword)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)

	_, body := b.get(t, c, "/webhooks", nil)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, 1, doc.Find(`[data-testid="webhook-empty"]`).Length())
	require.Equal(t, 1, doc.Find(`[data-testid="nav-webhooks"]`).Length())
	tok, ok := doc.Find(`form[data-testid="webhook-form"] input[name="_csrf"]`).Attr("value")
	require.True(t, ok)

	t.Run("RefusedWithoutCSRF", func(t *testing.T) {
		res, err := c.PostForm(b.srv.URL+"/webhooks", url.Values{"url": {"https://93.184.216.34/h"}, "events": {"task.completed"}})
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusForbidden, res.StatusCode)
	})
	t.Run("InvalidShowsError", func(t *testing.T) {
		res, err := c.PostForm(b.srv.URL+"/webhooks", url.Values{"url": {"http://10.0.0.1/h"}, "events": {"task.completed"}, "_csrf": {tok}})
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
		d, err := goquery.NewDocumentFromReader(res.Body)
		require.NoError(t, err)
		require.Contains(t, d.Find(`[data-testid="form-error"]`).Text(), "not allowed")
	})

	res, err = c.PostForm(b.srv.URL+"/webhooks", url.Values{"url": {"https://93.184.216.34/h"}, "events": {"task.completed", "task.failed"}, "_csrf": {tok}})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode)
	d, err := goquery.NewDocumentFromReader(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	secret := strings.TrimSpace(d.Find(`[data-testid="webhook-secret-value"]`).Text())
	require.True(t, strings.HasPrefix(secret, "whsec_"), "the secret is shown once")
	require.Equal(t, 1, d.Find(`[data-testid="webhook-row"]`).Length())

	_, body = b.get(t, c, "/webhooks", nil)
	require.NotContains(t, body, secret, "and never again")
	doc, err = goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	href, _ := doc.Find(`[data-testid="webhook-row"] a`).Attr("href")
	require.True(t, strings.HasPrefix(href, "/webhooks/"))
	wid := strings.TrimPrefix(href, "/webhooks/")

	// The delivery log with a redeliver button.
	tk := b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop"}`, nil)
	_, err = b.store.WebhookDeliveryEnqueue(t.Context(), []store.WebhookDeliveryParams{{ID: "msg_page1", TeamID: teamID(t, b, "rival"),
		WebhookID: wid, TaskID: tk.body["id"].(string), Seq: 1, EventType: "task.completed", URL: "https://93.184.216.34/h", Body: []byte(`{}`)}})
	require.NoError(t, err)
	for _, hx := range []map[string]string{nil, {"HX-Request": "true"}} {
		res, body := b.get(t, c, href, hx)
		require.Equal(t, http.StatusOK, res.StatusCode)
		doc, err = goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		require.Equal(t, 1, doc.Find(`[data-testid="delivery-row"]`).Length())
		require.Equal(t, hx == nil, doc.Find("html").Length() > 0 && doc.Find(`[data-testid="nav-webhooks"]`).Length() == 1)
	}
	form := doc.Find(`[data-testid="delivery-row"] form`)
	action, _ := form.Attr("action")
	rtok, _ := form.Find(`input[name="_csrf"]`).Attr("value")
	res, err = c.PostForm(b.srv.URL+action, url.Values{"_csrf": {rtok}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, href+"?redelivered=1", res.Header.Get("Location"))

	// Other people: alice (another team) gets 404, not the log.
	ca := b.browser(t)
	b.login(t, ca, "alice@acme.test", testPassword)
	res, _ = b.get(t, ca, href, nil)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = b.get(t, ca, "/webhooks", nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode)

	// Delete.
	dtok, _ := doc.Find(`input[name="_csrf"]`).Attr("value")
	res, err = c.PostForm(b.srv.URL+"/webhooks/"+wid+"/delete", url.Values{"_csrf": {dtok}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, body = b.get(t, c, "/webhooks", nil)
	require.Contains(t, body, `data-testid="webhook-empty"`)
}

// nameResolver resolves a fixed set of names (no DNS in tests).
type nameResolver map[string]string

func (r nameResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func TestWebhookNamesResolvingInside(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g, err := webhook.NewGuard(nil, nameResolver{
		"public.test": "93.184.216.34", "internal.test": "10.1.2.3", "meta.test": "169.254.169.254", "local.test": "::1",
	})
	require.NoError(t, err)
	cfg, err := config.Load(func(string) string { return "" })
	require.NoError(t, err)
	cfg.APIRate = 1000
	srv := httptest.NewServer(checkAPI(t, handlers.New(handlers.Deps{Config: cfg, Store: b.store, WebhookGuard: g})))
	t.Cleanup(srv.Close)
	b.srv = srv

	for _, host := range []string{"internal.test", "meta.test", "local.test"} {
		r := b.api(t, "POST", "/api/v1/webhooks", b.bobToken, `{"url":"https://`+host+`/h","events":["task.completed"]}`, nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
		_, field := errCode(r)
		require.Equal(t, "url", field)
		r = b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop","webhook":{"url":"https://`+host+`/h","secret":"0123456789abcdef"}}`, nil)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
		_, field = errCode(r)
		require.Equal(t, "webhook.url", field)
	}
	r := b.api(t, "POST", "/api/v1/webhooks", b.bobToken, `{"url":"https://public.test/h","events":["task.completed"]}`, nil)
	require.Equal(t, http.StatusCreated, r.status, r.raw)
	r = b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop","webhook":{"url":"https://public.test/h","secret":"0123456789abcdef"}}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
}
