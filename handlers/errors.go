package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/views/pages"
)

// APIError is an error with the contract's JSON body:
// {"error":{"code":"…","message":"…","field":"…"}}.
type APIError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// Errors, an extension of the contract's body, lists every field that
	// does not validate when there are several (Field names the first).
	Errors []FieldErrorJSON `json:"errors,omitempty"`
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter int `json:"-"`
	// Page is what the error page says instead of the status's words,
	// with a way back to where the thing may be found.
	Page *pages.ErrorProps `json:"-"`
}

// FieldErrorJSON is one entry of APIError.Errors.
type FieldErrorJSON struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

func errInvalid(field, format string, args ...any) *APIError {
	return &APIError{Status: http.StatusUnprocessableEntity, Code: "invalid", Message: fmt.Sprintf(format, args...), Field: field}
}

func errBadRequest(format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Code: "invalid", Message: fmt.Sprintf(format, args...)}
}

// notFoundPage is a 404 whose page says what was not found and where to
// look instead (its JSON body is the contract's not_found).
func notFoundPage(title, message, back, backLabel string) *APIError {
	return &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "not found",
		Page: &pages.ErrorProps{Title: title, Message: message, Back: back, BackLabel: backLabel}}
}

var (
	errUnauthenticated = &APIError{Status: http.StatusUnauthorized, Code: "unauthenticated", Message: "sign in or send a valid bearer token"}
	errForbidden       = &APIError{Status: http.StatusForbidden, Code: "forbidden", Message: "your role does not allow this"}
	errNotFound        = &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "not found"}
	errUnavailable     = &APIError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the database is unavailable; try again shortly", RetryAfter: 2}
)

// toAPIError maps any error to the contract's error shape.
func toAPIError(err error) *APIError {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := http.StatusText(he.Code)
		if m, ok := he.Message.(string); ok && m != "" {
			msg = m
		}
		switch he.Code {
		case http.StatusNotFound:
			return &APIError{Status: he.Code, Code: "not_found", Message: strings.ToLower(msg)}
		case http.StatusRequestEntityTooLarge:
			return &APIError{Status: he.Code, Code: "too_large", Message: "request body too large (limit 1 MiB)"}
		case http.StatusUnsupportedMediaType:
			return &APIError{Status: he.Code, Code: "unsupported_media_type", Message: msg}
		case http.StatusUnauthorized:
			return errUnauthenticated
		case http.StatusForbidden:
			return &APIError{Status: he.Code, Code: "forbidden", Message: msg}
		case http.StatusMethodNotAllowed:
			return &APIError{Status: he.Code, Code: "invalid", Message: "method not allowed"}
		}
		if he.Code < 500 {
			return &APIError{Status: he.Code, Code: "invalid", Message: msg}
		}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errNotFound
	case errors.Is(err, store.ErrConflict):
		return &APIError{Status: http.StatusConflict, Code: "conflict", Message: "the request conflicts with the current state"}
	case store.InvalidText(err):
		// Text that no check above the store caught: still the client's.
		return &APIError{Status: http.StatusUnprocessableEntity, Code: "invalid", Message: "text must be UTF-8 without NUL bytes"}
	case store.Transient(err), errors.Is(err, context.DeadlineExceeded):
		// A database fault (unreachable, restarting, connection lost) or
		// one that outlasted RequestTimeout: try again shortly.
		return errUnavailable
	}
	return &APIError{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error"}
}

// errorHandler is the one place errors are logged and rendered: the JSON body
// under /api/, an error page (or fragment for htmx) elsewhere.
func (h *Handler) errorHandler(err error, c echo.Context) {
	apiErr := toAPIError(err)
	logger := requestLogger(c, h.logger)
	switch {
	case apiErr.Status >= 500:
		logger.Error("Request failed", "status", apiErr.Status, "error", err)
	case apiErr.Status != http.StatusNotFound:
		logger.Warn("Request refused", "status", apiErr.Status, "code", apiErr.Code, "error", err)
	}
	if c.Response().Committed {
		return
	}
	if apiErr.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", fmt.Sprint(apiErr.RetryAfter))
	}
	if wantsJSON(c) {
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(apiErr.Status)
			return
		}
		_ = c.JSON(apiErr.Status, map[string]*APIError{"error": apiErr})
		return
	}
	title := http.StatusText(apiErr.Status)
	if title == "" {
		title = "Error"
	}
	msg := apiErr.Message
	if apiErr.Status >= 500 && apiErr.Status != http.StatusServiceUnavailable {
		msg = "Something went wrong on our side. The error was logged."
	}
	page := pages.ErrorProps{Title: title, Message: msg}
	if apiErr.Page != nil {
		page = *apiErr.Page
	} else if apiErr.Status == http.StatusNotFound {
		page = pages.ErrorProps{Title: "Page not found", Message: "Nothing is at this address. It may have been mistyped, or the link is old."}
	}
	page.Status, page.RequestID = apiErr.Status, requestID(c)
	rerr := h.render(c, apiErr.Status, page.Title, "", pages.Error(page))
	if rerr != nil {
		logger.Error("Error page failed to render", "error", rerr)
	}
}

// wantsJSON: the API and the probes always answer JSON; pages answer HTML
// unless the client asks for JSON only.
func wantsJSON(c echo.Context) bool {
	path := c.Request().URL.Path
	if strings.HasPrefix(path, "/api/") || path == "/healthz" || path == "/readyz" || path == "/metrics" {
		return true
	}
	a := c.Request().Header.Get("Accept")
	return strings.Contains(a, "application/json") && !strings.Contains(a, "text/html")
}

func requestLogger(c echo.Context, fallback *slog.Logger) *slog.Logger {
	if l, ok := c.Get(ctxLogger).(*slog.Logger); ok {
		return l
	}
	return fallback
}
