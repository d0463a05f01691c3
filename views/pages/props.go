// Package pages holds the content of each page; handlers wrap it in the
// layout (or send it alone to htmx). Props structs are plain data.
package pages

import "time"

// LoginProps are the inputs of Login.
type LoginProps struct {
	Email, Error, CSRFToken, Next string
}

// TaskRow is one task in the list.
type TaskRow struct {
	ID, Kind, Pipeline, State, Priority, CreatedBy string
	CreatedAt                                      time.Time
}

// TaskListProps are the inputs of TaskList.
type TaskListProps struct {
	Tasks []TaskRow
	Next  string // cursor of the next page; "" when none
}

// ErrorProps are the inputs of Error.
type ErrorProps struct {
	Status         int
	Title, Message string
	RequestID      string
}
