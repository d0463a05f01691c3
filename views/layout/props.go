// Package layout holds the page frame every full page is rendered in.
package layout

// Viewer is the signed-in person shown in the top bar.
type Viewer struct {
	Email, Team, Role string
	// Webhooks and Audit: the person manages webhooks, reads the audit
	// log, in one of their teams at least (the links are shown).
	Webhooks, Audit bool
}

// BaseProps are the inputs of Base.
type BaseProps struct {
	Title     string
	Viewer    *Viewer // nil when signed out: no navigation
	CSRFToken string
	Active    string // "tasks", "dashboard" or "pipelines"
	// Approvals is how many approvals the viewer may decide (the
	// navigation's badge); 0 shows none.
	Approvals int
}
