package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"flightdeck/workflow/task"
)

// A write's events are stored as one row of task_event_batches: seqs
// first_seq … last_seq, the events a jsonb array in seq order (migration
// 00017). Each event is the contract's event JSON without the parts the row
// already says (task_id, seq, time), zero values left out:
//
//	{"type":…,"status":…,"message":…,"data":{…},"step":…,"total_step":…,"step_name":…,"tool":…,"time":…}
//
// "time" is there only for an event made with its own time (a log line
// stamped where it was read); the others' time is the batch's created_at.
//
// appendEvents is the one Go encoder and decodeEvents the one decoder; SQL
// that writes an event itself (a claim, a rescue, a submit) builds the same
// object with flightdeck_event (migration 00025).

// appendEvents appends events as the stored JSON array. It is written by
// hand because it runs for every write on the queue's hot path; Data is
// copied as is (it is JSON our own code marshalled or built).
func appendEvents(b []byte, events []task.Event) []byte {
	b = append(b, '[')
	for i, e := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = appendJSONString(b, string(e.Type))
		b = append(b, `,"status":`...)
		b = appendJSONString(b, string(e.Status))
		if e.Message != "" {
			b = append(b, `,"message":`...)
			b = appendJSONString(b, e.Message)
		}
		if !emptyData(e.Data) {
			b = append(b, `,"data":`...)
			b = append(b, e.Data...)
		}
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
		if !e.Time.IsZero() {
			// An event that says when it was made (a log line, stamped
			// where it was read) keeps that time; others take the
			// write's (the batch's created_at).
			b = append(b, `,"time":"`...)
			b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// emptyData: data stored as nothing (read back as {}).
func emptyData(d json.RawMessage) bool {
	return len(d) == 0 || string(d) == "{}" || string(d) == "null"
}

// encodeEvents is the stored array of events (nil for none).
func encodeEvents(events []task.Event) []byte {
	if len(events) == 0 {
		return nil
	}
	return appendEvents(make([]byte, 0, 192*len(events)), events)
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

// storedEvent is one stored event as decodeEvents reads it.
type storedEvent struct {
	Type      string          `json:"type"`
	Status    string          `json:"status"`
	Message   string          `json:"message"`
	Data      json.RawMessage `json:"data"`
	Step      int             `json:"step"`
	TotalStep int             `json:"total_step"`
	StepName  string          `json:"step_name"`
	Tool      string          `json:"tool"`
	Time      *time.Time      `json:"time"`
}

// decodeEvents turns a stored array back into events with seqs first, first+1, ….
func decodeEvents(taskID string, first int, at time.Time, raw []byte) ([]task.Event, error) {
	var stored []storedEvent
	if err := json.Unmarshal(raw, &stored); err != nil {
		return nil, fmt.Errorf("error decoding the events of task %s from seq %d: %w", taskID, first, err)
	}
	out := make([]task.Event, len(stored))
	for i, se := range stored {
		data := json.RawMessage(`{}`)
		if !emptyData(se.Data) {
			data = se.Data
		}
		out[i] = task.Event{TaskID: taskID, Seq: first + i, Type: task.EventType(se.Type), Status: task.Status(se.Status),
			Step: se.Step, TotalStep: se.TotalStep, StepName: se.StepName, Tool: se.Tool, Message: se.Message,
			Data: data, Time: at.UTC()}
		if se.Time != nil {
			out[i].Time = se.Time.UTC()
		}
	}
	return out, nil
}
