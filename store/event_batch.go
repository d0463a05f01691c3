package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"flightdeck/workflow/task"
)

// A write's events are stored as one row of task_event_batches (migration
// 00012): seqs first_seq … last_seq, the events a JSON array in seq order.
// These helpers encode that array, decode it, and hold the SQL every writer
// shares.

// storedEvent is one element of task_event_batches.events. Zero values are
// left out; the task id, seq and time come from the row.
type storedEvent struct {
	Type      task.EventType  `json:"type"`
	Status    task.Status     `json:"status"`
	Step      int             `json:"step"`
	TotalStep int             `json:"total_step"`
	StepName  string          `json:"step_name"`
	Tool      string          `json:"tool"`
	Message   string          `json:"message"`
	Data      json.RawMessage `json:"data"`
}

// appendEventsJSON appends events as the stored JSON array. It is written by
// hand because it runs for every write on the queue's hot path; Data is
// copied as is (it is JSON our own code marshalled, and PostgreSQL checks
// the whole array's syntax as it stores it).
func appendEventsJSON(b []byte, events []task.Event) []byte {
	b = append(b, '[')
	for i, e := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = appendJSONString(b, string(e.Type))
		b = append(b, `,"status":`...)
		b = appendJSONString(b, string(e.Status))
		if e.Step != 0 {
			b = append(b, `,"step":`...)
			b = strconv.AppendInt(b, int64(e.Step), 10)
		}
		if e.TotalStep != 0 {
			b = append(b, `,"total_step":`...)
			b = strconv.AppendInt(b, int64(e.TotalStep), 10)
		}
		if e.StepName != "" {
			b = append(b, `,"step_name":`...)
			b = appendJSONString(b, e.StepName)
		}
		if e.Tool != "" {
			b = append(b, `,"tool":`...)
			b = appendJSONString(b, e.Tool)
		}
		if e.Message != "" {
			b = append(b, `,"message":`...)
			b = appendJSONString(b, e.Message)
		}
		if len(e.Data) > 0 && string(e.Data) != "{}" && string(e.Data) != "null" {
			b = append(b, `,"data":`...)
			b = append(b, e.Data...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
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
	var stored []storedEvent
	if err := json.Unmarshal(raw, &stored); err != nil {
		return nil, fmt.Errorf("error decoding the events of task %s from seq %d: %w", taskID, first, err)
	}
	out := make([]task.Event, len(stored))
	for i, s := range stored {
		data := s.Data
		if len(data) == 0 {
			data = json.RawMessage(`{}`)
		}
		out[i] = task.Event{TaskID: taskID, Seq: first + i, Type: s.Type, Status: s.Status, Step: s.Step, TotalStep: s.TotalStep,
			StepName: s.StepName, Tool: s.Tool, Message: s.Message, Data: data, Time: at.UTC()}
	}
	return out, nil
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
// json object expression. Callers wrap events in json_build_array.
func stateEventSQL(typ, status, message, data string) string {
	return `json_build_object('type', ` + typ + `, 'status', ` + status + `, 'message', ` + message + `, 'data', ` + data + `)`
}
