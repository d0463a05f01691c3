package pages

import "time"

// AuditRow is one entry of the audit log page.
type AuditRow struct {
	ID     string
	At     time.Time
	Actor  string
	Type   string
	TaskID string // "" for none
	Detail string // the detail as JSON text
	// Sentence is the entry in words (words.Audit); the detail stays
	// behind a toggle for what it leaves out.
	Sentence string
}

// AuditProps are the inputs of Audit.
type AuditProps struct {
	Rows  []AuditRow
	Type  string   // the filter, "" for every type
	Actor string   // the filter, "" for everyone
	Types []string // the filter's choices
	// Next is the query of the next page ("" for none), CSV the download's.
	Next, CSV string
}
