package handlers

import (
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// maxAuditPage bounds ?limit= of the audit log.
const maxAuditPage = 500

// auditQuery reads the audit log's filters; admins of the team only.
func (h *Handler) auditQuery(c echo.Context) (store.AuditListParams, error) {
	team, err := adminTeam(userOf(c), c.QueryParam("team"), task.ActReadAudit)
	if err != nil {
		return store.AuditListParams{}, err
	}
	p := store.AuditListParams{TeamID: team.TeamID, Type: c.QueryParam("type"), Actor: c.QueryParam("actor"), Limit: 50}
	for field, v := range map[string]string{"type": p.Type, "actor": p.Actor} {
		if err := checkText(field, v); err != nil {
			return p, err
		}
	}
	if v := c.QueryParam("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return p, errInvalid("before", "before must be the next cursor of an earlier page")
		}
		p.Before = n
	}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAuditPage {
			return p, errInvalid("limit", "limit must be between 1 and %d", maxAuditPage)
		}
		p.Limit = n
	}
	return p, nil
}

// apiAuditList answers the audit log as JSON, or as CSV with
// ?format=csv (the same download as the page's: RFC 3339 times, cells a
// spreadsheet will not run).
func (h *Handler) apiAuditList(c echo.Context) error {
	p, err := h.auditQuery(c)
	if err != nil {
		return err
	}
	switch c.QueryParam("format") {
	case "csv":
		return h.auditCSV(c, p)
	case "", "json":
	default:
		return errInvalid("format", "format must be json or csv")
	}
	entries, next, err := h.store.AuditList(c.Request().Context(), p)
	if err != nil {
		return err
	}
	var cursor *string
	if next > 0 {
		s := strconv.FormatInt(next, 10)
		cursor = &s
	}
	if entries == nil {
		entries = []store.AuditEntry{}
	}
	return c.JSON(http.StatusOK, map[string]any{"entries": entries, "next": cursor})
}

// auditCSV pages through the log (up to maxAuditCSV rows) and writes it
// as CSV.
func (h *Handler) auditCSV(c echo.Context, p store.AuditListParams) error {
	var all []store.AuditEntry
	p.Limit = maxAuditPage
	for len(all) < maxAuditCSV {
		entries, next, err := h.store.AuditList(c.Request().Context(), p)
		if err != nil {
			return err
		}
		all = append(all, entries...)
		if next == 0 {
			break
		}
		p.Before = next
	}
	return writeAuditCSV(c, all)
}

// writeAuditCSV writes entries as CSV (the /audit page's download).
func writeAuditCSV(c echo.Context, entries []store.AuditEntry) error {
	c.Response().Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	c.Response().Header().Set("Content-Disposition", `attachment; filename="audit.csv"`)
	c.Response().WriteHeader(http.StatusOK)
	w := csv.NewWriter(c.Response())
	_ = w.Write([]string{"id", "at", "actor", "type", "task_id", "detail"})
	for _, e := range entries {
		taskID := ""
		if e.TaskID != nil {
			taskID = *e.TaskID
		}
		_ = w.Write([]string{strconv.FormatInt(e.ID, 10), e.At.UTC().Format(time.RFC3339), csvSafe(e.Actor), csvSafe(e.Type), taskID, csvSafe(string(e.Detail))})
	}
	w.Flush()
	return w.Error()
}

// csvSafe keeps a spreadsheet from reading a cell as a formula (a leading
// =, +, -, @, TAB or CR) and shows bidirectional controls as escapes.
func csvSafe(s string) string {
	s = task.ShowBidi(s)
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
