// Package migrations holds flightdeck's numbered SQL migrations, embedded so
// the binary carries its schema. store/migrate.go applies them.
package migrations

import "embed"

// FS holds every migration file (00001_init.sql, …). Files are never edited
// once merged: a change is a new file.
//
//go:embed *.sql
var FS embed.FS
