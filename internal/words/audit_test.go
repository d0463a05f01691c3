package words

import "testing"

func TestAudit(t *testing.T) {
	for _, c := range []struct {
		actor, typ, detail, want string
	}{
		{"pat@acme.test", "approval.decided", `{"kind":"environment","environment":"production","decision":"approved","comment":"looks good"}`,
			"pat@acme.test approved the deploy to production as a reviewer: “looks good”"},
		{"pat@acme.test", "approval.decided", `{"kind":"step","step":"deploy","decision":"rejected","comment":""}`,
			"pat@acme.test rejected step deploy"},
		{"admin@acme.test", "freeze.created", `{"environment":"staging","until":"2026-11-28T18:00:00Z","reason":"incident 1"}`,
			"admin@acme.test froze staging until Sat 28 Nov 2026 18:00 UTC: “incident 1”"},
		{"admin@acme.test", "task.override", `{"by":"admin@acme.test","reason":"hotfix for the outage","environment":"production"}`,
			"admin@acme.test overrode the rules of production: “hotfix for the outage”"},
		{"dev@acme.test", "task.cancelled", `{"state":"awaiting_approval"}`, "dev@acme.test cancelled the task while it was awaiting approval"},
		{"dev@acme.test", "task.resumed", `{"action":"skip","step":"smoke","comment":"checked by hand"}`,
			"dev@acme.test skipped step smoke and went on: “checked by hand”"},
		{"system", "task.resumed", `{"action":"rollback","step":"smoke","reason":"decision timed out"}`,
			"flightdeck rolled the task back after step smoke failed: decision timed out"},
		{"cli", "token.created", `{"email":"alice@acme.test","name":"laptop"}`, "The command line created the token laptop for alice@acme.test"},
		{"cli", "token.revoked", `{"email":"alice@acme.test","name":"","revoked":2}`, "The command line revoked 2 tokens of alice@acme.test"},
		{"x@acme.test", "something.new", `not json`, "x@acme.test did something.new"},
	} {
		if got := Audit(c.actor, c.typ, []byte(c.detail)); got != c.want {
			t.Errorf("Audit(%s, %s) = %q\nwant %q", c.actor, c.typ, got, c.want)
		}
	}
}
