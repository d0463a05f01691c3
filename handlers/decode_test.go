package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type decodeTarget struct {
	Kind    string          `json:"kind"`
	Count   int             `json:"count"`
	Params  map[string]any  `json:"params"`
	Raw     json.RawMessage `json:"raw"`
	Webhook *struct {
		URL string `json:"url"`
	} `json:"webhook"`
	Events  []string               `json:"events"`
	Steps   []decodeStep           `json:"steps"`
	Budgets map[string]decodeLimit `json:"budgets"`
	decodeEmbedded
}

type decodeStep struct {
	Name string      `json:"name"`
	With *decodeStep `json:"with"`
}

type decodeLimit struct {
	Max uint `json:"max"`
}

type decodeEmbedded struct {
	Note   string `json:"note"`
	hidden string //nolint:unused // unexported: not a JSON field
}

func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		status     int
		field      string
	}{
		{"Valid", `{"kind":"deploy","count":2,"params":{"a":1}}`, 0, ""},
		{"Empty", ``, http.StatusBadRequest, ""},
		{"Malformed", `{"kind":`, http.StatusBadRequest, ""},
		{"TrailingGarbage", `{"kind":"deploy"} x`, http.StatusBadRequest, ""},
		{"TwoValues", `{"kind":"deploy"}{"kind":"agent"}`, http.StatusBadRequest, ""},
		{"DuplicateKey", `{"kind":"deploy","kind":"agent"}`, http.StatusBadRequest, "kind"},
		{"NestedDuplicateKey", `{"params":{"a":1,"a":2}}`, http.StatusBadRequest, "params.a"},
		{"SameKeyInSiblings", `{"params":{"a":{"x":1},"b":{"x":2}}}`, 0, ""},
		{"UnknownField", `{"kind":"deploy","colour":"red"}`, http.StatusUnprocessableEntity, "colour"},
		{"WrongType", `{"kind":5}`, http.StatusUnprocessableEntity, "kind"},
		{"WrongNestedType", `{"count":"two"}`, http.StatusUnprocessableEntity, "count"},
		{"NotAnObject", `[1]`, http.StatusUnprocessableEntity, ""},
		{"UnknownNestedField", `{"webhook":{"url":"https://x.test","x":1}}`, http.StatusUnprocessableEntity, "webhook.x"},
		{"UnknownFieldInArrayItem", `{"steps":[{"name":"a"},{"name":"b","colour":1}]}`, http.StatusUnprocessableEntity, "steps.1.colour"},
		{"UnknownFieldDeepInArrayItem", `{"steps":[{"with":{"with":{"nope":true}}}]}`, http.StatusUnprocessableEntity, "steps.0.with.with.nope"},
		{"UnknownFieldInMapValue", `{"budgets":{"steps":{"max":3,"min":1}}}`, http.StatusUnprocessableEntity, "budgets.steps.min"},
		{"UnknownFieldAfterKnownNested", `{"webhook":{"url":"u"},"extra":1}`, http.StatusUnprocessableEntity, "extra"},
		{"UnexportedIsUnknown", `{"hidden":"x"}`, http.StatusUnprocessableEntity, "hidden"},
		{"EmbeddedFieldIsKnown", `{"note":"x"}`, 0, ""},
		{"FieldNamesFoldCase", `{"KIND":"deploy","Webhook":{"URL":"u"}}`, 0, ""},
		{"FreeFormObjectsTakeAnything", `{"params":{"a":{"b":[1,{"c":2}]}},"raw":{"x":[{"y":1}]}}`, 0, ""},
		{"WrongTypeNested", `{"webhook":{"url":5}}`, http.StatusUnprocessableEntity, "webhook.url"},
		{"WrongTypeInArray", `{"events":["task.failed",5]}`, http.StatusUnprocessableEntity, "events.1"},
		{"WrongTypeInArrayItem", `{"steps":[{"name":"a"},{"name":[]}]}`, http.StatusUnprocessableEntity, "steps.1.name"},
		{"FractionForInteger", `{"budgets":{"steps":{"max":1.5}}}`, http.StatusUnprocessableEntity, "budgets.steps.max"},
		{"NegativeForUnsigned", `{"budgets":{"steps":{"max":-1}}}`, http.StatusUnprocessableEntity, "budgets.steps.max"},
		{"ObjectForList", `{"events":{"a":1}}`, http.StatusUnprocessableEntity, "events"},
		{"NullsAreFine", `{"webhook":null,"events":null,"steps":[null],"count":null}`, 0, ""},
		{"WrongTypeInMapValue", `{"budgets":{"a":{"max":"x"}}}`, http.StatusUnprocessableEntity, "budgets.a.max"},
		{"WrongTypeDeepInArrayItem", `{"steps":[{"name":"a"},{"with":{"name":5}}]}`, http.StatusUnprocessableEntity, "steps.1.with.name"},
		{"UnknownFieldBeforeAWrongType", `{"webhook":{"x":1},"count":"two"}`, http.StatusUnprocessableEntity, "webhook.x"},
		{"DuplicateKeyInArrayItem", `{"steps":[{"name":"a"},{"name":"a","name":"b"}]}`, http.StatusBadRequest, "steps.1.name"},
		// encoding/json matches field names without regard to case, so keys
		// that differ only in case are the same field said twice.
		{"DuplicateKeyDifferingInCase", `{"kind":"deploy","KIND":"agent"}`, http.StatusBadRequest, "KIND"},
		{"NestedDuplicateDifferingInCase", `{"webhook":{"url":"a","Url":"b"}}`, http.StatusBadRequest, "webhook.Url"},
		{"MapKeysDifferingInCase", `{"params":{"app":"a","APP":"b"}}`, http.StatusBadRequest, "params.APP"},
		{"KelvinSignFoldsToK", "{\"kind\":\"deploy\",\"\u212aind\":\"agent\"}", http.StatusBadRequest, "\u212aind"},
		{"LongSFoldsToS", "{\"steps\":[],\"\u017fteps\":[]}", http.StatusBadRequest, "\u017fteps"},
		// encoding/json would store U+FFFD where the client sent other bytes.
		{"InvalidUTF8InAValue", "{\"params\":{\"app\":\"a\xff\xfeb\"}}", http.StatusUnprocessableEntity, "params.app"},
		{"InvalidUTF8InAListItem", "{\"kind\":\"deploy\",\"events\":[\"ok\",\"\xc3\"]}", http.StatusUnprocessableEntity, "events.1"},
		{"InvalidUTF8InAKey", "{\"params\":{\"a\xffb\":1}}", http.StatusUnprocessableEntity, "params.a\ufffdb"},
		{"InvalidUTF8DeepInArrayItem", "{\"steps\":[{\"name\":\"a\"},{\"with\":{\"name\":\"\x80\"}}]}", http.StatusUnprocessableEntity, "steps.1.with.name"},
		{"TruncatedRuneAtTheEnd", "{\"kind\":\"\xe2\x82\"}", http.StatusUnprocessableEntity, "kind"},
		{"ValidUTF8IsFine", "{\"kind\":\"d\u00e9ploy \u2603\"}", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dst decodeTarget
			err := decodeStrict([]byte(tt.body), &dst)
			if tt.status == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			apiErr := toAPIError(err)
			require.Equal(t, tt.status, apiErr.Status, apiErr.Message)
			require.Equal(t, tt.field, apiErr.Field)
		})
	}
}

// TestEncodingJSONErrorsLackTheDottedPath pins why decode_path.go walks the
// body itself: encoding/json names a wrong type's field without array
// indices or map keys, and an unknown field by its key alone, in an error
// with no type to read it from. When this fails, a newer Go reports the
// path the contract's `field` needs, and the walker can go.
func TestEncodingJSONErrorsLackTheDottedPath(t *testing.T) {
	t.Parallel()
	decode := func(body string) error {
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		var dst decodeTarget
		return dec.Decode(&dst)
	}
	var typeErr *json.UnmarshalTypeError
	require.ErrorAs(t, decode(`{"steps":[{"name":"a"},{"name":[]}]}`), &typeErr)
	require.Equal(t, "steps.name", typeErr.Field, "no index: the contract wants steps.1.name")
	require.ErrorAs(t, decode(`{"budgets":{"steps":{"max":1.5}}}`), &typeErr)
	require.Equal(t, "budgets.max", typeErr.Field, "no map key: the contract wants budgets.steps.max")
	err := decode(`{"webhook":{"url":"u","x":1}}`)
	require.EqualError(t, err, `json: unknown field "x"`, "the key alone: the contract wants webhook.x")
	require.False(t, errors.As(err, &typeErr))
}

func TestCanonicalHash(t *testing.T) {
	t.Parallel()
	a := canonicalHash([]byte(`{"kind":"deploy","params":{"b":1,"a":2}}`))
	b := canonicalHash([]byte(`{ "params": {"a":2, "b":1}, "kind": "deploy" }`))
	c := canonicalHash([]byte(`{"kind":"deploy","params":{"b":1,"a":3}}`))
	require.Equal(t, a, b, "same JSON value")
	require.NotEqual(t, a, c)
}

func FuzzDecodeStrict(f *testing.F) {
	f.Add(`{"kind":"deploy","params":{"a":1}}`)
	f.Add(`{"kind":"deploy","kind":1}`)
	f.Add(`[[[[]]]]`)
	f.Fuzz(func(t *testing.T, body string) {
		var dst decodeTarget
		err := decodeStrict([]byte(body), &dst)
		if err != nil {
			if s := toAPIError(err).Status; s != 400 && s != 422 {
				t.Fatalf("status %d for %q", s, body)
			}
		}
	})
}

func FuzzWSMessage(f *testing.F) {
	f.Add([]byte(`{"type":"subscribe","task_id":"x","after_seq":3,"id":"a"}`))
	f.Add([]byte(`{"type":"approve","id":"c2","comment":"ok","extra":1}`))
	f.Add([]byte(`{"type":1,"id":"n"}`))
	f.Add([]byte("\xff\xfe"))
	f.Add([]byte(`{"id":"d","id":"e"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, bad := parseWSMessage(raw)
		if bad == nil {
			// A message that parsed re-encodes to one that parses the same.
			again, bad2 := parseWSMessage(mustJSON(m))
			if bad2 != nil || again != m {
				t.Fatalf("round trip of %q: %+v vs %+v (%v)", raw, m, again, bad2)
			}
			return
		}
		if bad.Type != "error" || bad.Code != "invalid" || bad.Message == "" {
			t.Fatalf("bad reply %+v for %q", bad, raw)
		}
	})
}
