// Package components holds small reusable view pieces (badges, rows, cards).
package components
