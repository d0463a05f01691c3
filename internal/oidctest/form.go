package oidctest

import "html/template"

// signInForm is the provider's own sign-in page: it sends the authorize
// request again with the person's email (and the test knobs).
var signInForm = template.Must(template.New("form").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Fake identity provider</title></head>
<body>
<h1>Fake identity provider</h1>
<form method="get" action="/authorize">
{{range $k, $vs := .}}{{range $vs}}<input type="hidden" name="{{$k}}" value="{{.}}">
{{end}}{{end}}<label>Email <input name="email" type="email" required></label>
<label>Email verified
<select name="email_verified"><option>true</option><option>false</option><option>missing</option></select></label>
<label>ID token
<select name="id_token"><option value="">valid</option><option>expired</option><option>wrong_nonce</option></select></label>
<button type="submit">Sign in</button>
</form>
</body></html>
`))
