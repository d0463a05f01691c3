package handlers

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// bodyProblem finds where body does not fit t, as encoding/json sees it:
// the first key (in document order) that names no field, or the first
// value of the wrong JSON kind. path is the dotted path in the body
// ("webhook.x", "events.1"); encoding/json itself reports an unknown
// field by its key alone and a wrong type without array indices. found is
// false when it sees nothing wrong; the decoder's own report then stands.
func bodyProblem(body []byte, t reflect.Type) (path string, unknown, found bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	p, err := walkValue(dec, t, "")
	if err != nil || p == nil {
		return "", false, false
	}
	return p.path, p.unknown, true
}

type bodyIssue struct {
	path    string
	unknown bool
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// walkValue reads one value from dec and checks it against t. It stops at
// the first issue (the rest of the body is left unread).
func walkValue(dec *json.Decoder, t reflect.Type, path string) (*bodyIssue, error) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if t == nil || t.Kind() == reflect.Interface || customDecoded(t) {
		return nil, skipRest(dec, tok) // anything goes: its own decoder judges
	}
	switch v := tok.(type) {
	case nil:
		return nil, nil
	case json.Delim:
		switch {
		case v == '{' && t.Kind() == reflect.Struct:
			return walkObject(dec, path, func(key string) (reflect.Type, bool) { return structField(t, key) })
		case v == '{' && t.Kind() == reflect.Map:
			return walkObject(dec, path, func(string) (reflect.Type, bool) { return t.Elem(), true })
		case v == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
			for i := 0; dec.More(); i++ {
				if p, err := walkValue(dec, t.Elem(), joinPath(path, strconv.Itoa(i))); p != nil || err != nil {
					return p, err
				}
			}
			_, err := dec.Token()
			return nil, err
		}
	case string:
		if t.Kind() == reflect.String || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8) {
			return nil, nil
		}
	case bool:
		if t.Kind() == reflect.Bool {
			return nil, nil
		}
	case json.Number:
		if numberFits(v, t.Kind()) {
			return nil, nil
		}
	}
	return &bodyIssue{path: path}, nil
}

// walkObject checks the members of an object whose '{' was read; field
// returns the type of a key's value, or false for an unknown key.
func walkObject(dec *json.Decoder, path string, field func(string) (reflect.Type, bool)) (*bodyIssue, error) {
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := kt.(string)
		ft, ok := field(key)
		if !ok {
			return &bodyIssue{path: joinPath(path, key), unknown: true}, nil
		}
		if p, err := walkValue(dec, ft, joinPath(path, key)); p != nil || err != nil {
			return p, err
		}
	}
	_, err := dec.Token()
	return nil, err
}

func customDecoded(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler)
}

func numberFits(n json.Number, k reflect.Kind) bool {
	var err error
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		_, err = strconv.ParseInt(n.String(), 10, 64)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		_, err = strconv.ParseUint(n.String(), 10, 64)
	case reflect.Float32, reflect.Float64:
		_, err = strconv.ParseFloat(n.String(), 64)
	default:
		return false
	}
	return err == nil
}

// skipRest consumes the rest of a value whose first token was tok.
func skipRest(dec *json.Decoder, tok json.Token) error {
	if d, ok := tok.(json.Delim); !ok || (d != '{' && d != '[') {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// structField resolves key to a field of struct t the way encoding/json
// does: by json tag or Go name, exact match first, then case-insensitive,
// promoting the fields of untagged embedded structs.
func structField(t reflect.Type, key string) (reflect.Type, bool) {
	var fold reflect.Type
	var found bool
	var visit func(t reflect.Type) bool
	visit = func(t reflect.Type) bool {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				et := f.Type
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct {
					if visit(et) {
						return true
					}
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			ft := f.Type
			if strings.Contains(opts, "string") {
				ft = nil // ",string": a quoted value; its own rules
			}
			if name == key {
				fold, found = ft, true
				return true
			}
			if !found && strings.EqualFold(name, key) {
				fold, found = ft, true
			}
		}
		return false
	}
	visit(t)
	return fold, found
}
