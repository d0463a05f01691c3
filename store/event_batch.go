package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"flightdeck/workflow/task"
)

// A write's events are stored as one row of task_event_batches (migrations
// 00012 and 00015): seqs first_seq … last_seq, the events a JSON array in
// seq order, kept as text. Each event is itself an array, by position:
//
//	[type, status, message, data, step, total_step, step_name, tool]
//
// with the trailing ones left out when they are zero (data: {}). Keys
// repeated in every event were most of a batch's bytes. These helpers
// encode that array, decode it, and hold the SQL every writer shares.

// appendEventsJSON appends events as the stored JSON array. It is written by
// hand because it runs for every write on the queue's hot path; Data is
// copied as is (it is JSON our own code marshalled or built).
func appendEventsJSON(b []byte, events []task.Event) []byte {
	b = append(b, '[')
	for i, e := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendJSONString(b, string(e.Type))
		b = append(b, ',')
		b = appendJSONString(b, string(e.Status))
		b = append(b, ',')
		b = appendJSONString(b, e.Message)
		// how many of data, step, total_step, step_name, tool follow
		rest := 5
		switch {
		case e.Tool != "":
		case e.StepName != "":
			rest = 4
		case e.TotalStep != 0:
			rest = 3
		case e.Step != 0:
			rest = 2
		case !emptyData(e.Data):
			rest = 1
		default:
			rest = 0
		}
		if rest >= 1 {
			b = append(b, ',')
			if emptyData(e.Data) {
				b = append(b, '{', '}')
			} else {
				b = append(b, e.Data...)
			}
		}
		if rest >= 2 {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(e.Step), 10)
		}
		if rest >= 3 {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(e.TotalStep), 10)
		}
		if rest >= 4 {
			b = append(b, ',')
			b = appendJSONString(b, e.StepName)
		}
		if rest >= 5 {
			b = append(b, ',')
			b = appendJSONString(b, e.Tool)
		}
		b = append(b, ']')
	}
	return append(b, ']')
}

// emptyData: data stored as nothing (read back as {}).
func emptyData(d json.RawMessage) bool {
	return len(d) == 0 || string(d) == "{}" || string(d) == "null"
}

// eventsJSON is the stored array of events (nil for none).
func eventsJSON(events []task.Event) []byte {
	if len(events) == 0 {
		return nil
	}
	return appendEventsJSON(make([]byte, 0, 160*len(events)), events)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 and NUL (which
// PostgreSQL's text and jsonb refuse) become U+FFFD, so odd bytes in a log
// line never fail the write that carries it.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
			i++
		case c == '\n':
			b = append(b, '\\', 'n')
			i++
		case c == '\r':
			b = append(b, '\\', 'r')
			i++
		case c == '\t':
			b = append(b, '\\', 't')
			i++
		case c == 0:
			b = append(b, `\ufffd`...)
			i++
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
		}
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// decodeEvents turns a stored array back into events with seqs first, first+1, ….
func decodeEvents(taskID string, first int, at time.Time, raw []byte) ([]task.Event, error) {
	var stored [][]json.RawMessage
	if err := json.Unmarshal(raw, &stored); err != nil {
		return nil, fmt.Errorf("error decoding the events of task %s from seq %d: %w", taskID, first, err)
	}
	out := make([]task.Event, len(stored))
	for i, fields := range stored {
		e := task.Event{TaskID: taskID, Seq: first + i, Data: json.RawMessage(`{}`), Time: at.UTC()}
		if err := decodeEvent(&e, fields); err != nil {
			return nil, fmt.Errorf("error decoding event %d of task %s: %w", first+i, taskID, err)
		}
		out[i] = e
	}
	return out, nil
}

// decodeEvent fills e from a stored event's fields (see appendEventsJSON).
func decodeEvent(e *task.Event, fields []json.RawMessage) error {
	if len(fields) < 3 || len(fields) > 8 {
		return fmt.Errorf("%d fields, want 3 to 8", len(fields))
	}
	var typ, status string
	dst := []any{&typ, &status, &e.Message, nil, &e.Step, &e.TotalStep, &e.StepName, &e.Tool}
	for i, f := range fields {
		if i == 3 {
			if !emptyData(f) {
				e.Data = append(json.RawMessage(nil), f...)
			}
			continue
		}
		if err := json.Unmarshal(f, dst[i]); err != nil {
			return err
		}
	}
	e.Type, e.Status = task.EventType(typ), task.Status(status)
	return nil
}

// insertBatchesSQL is the statement (or CTE body) that stores each row of
// src's events as one batch: src has columns id, last_seq (the task's after
// the write), n (events written) and events (their stored array).
func insertBatchesSQL(src string) string {
	return `INSERT INTO task_event_batches (task_id, first_seq, last_seq, events)
			SELECT id, last_seq - n + 1, last_seq, events FROM ` + src + ` WHERE n > 0`
}

// stateEventSQL builds, in SQL, one stored event the database writes itself
// (a claim, a rescue): type, status and message are SQL expressions, data a
// json object expression. Callers wrap events in eventsSQL.
func stateEventSQL(typ, status, message, data string) string {
	return `json_build_array(` + typ + `, ` + status + `, ` + message + `, ` + data + `)`
}

// eventsSQL is the stored array of events built in SQL (stateEventSQL).
func eventsSQL(events ...string) string {
	return `json_build_array(` + strings.Join(events, ", ") + `)::text`
}
