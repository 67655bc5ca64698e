package trainer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// A configuration section is the settings of an algorithm above trainer
// (tailoring's, linear's post-processing) kept in Config under its own
// report.json key. trainer stores a section as the JSON of its owner's
// type and never reads it: the owning package registers the key and type
// (RegisterSection) and reads and writes its settings with Section and
// WithSection. report.json keeps the shape it had when the sections were
// fields of Config: the same top-level key, left out when the settings are
// zero, so old report and sweep files still load.

// sectionInfo is a registered section: its Go type.
type sectionInfo struct {
	typ reflect.Type
}

var (
	sectionsMu sync.RWMutex
	sections   = map[string]sectionInfo{}
	// sectionOrder is the registration order, the order sections are
	// written in.
	sectionOrder []string
)

// RegisterSection makes key a section of Config holding a T (a struct with
// json tags): Config's JSON carries it as the top-level key, and decoding
// refuses keys T lacks as it refuses keys Config lacks. A package calls it
// from init; registering a key twice panics.
func RegisterSection[T any](key string) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("trainer: section %q: %v is not a struct", key, t))
	}
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		if n, _, _ := strings.Cut(ct.Field(i).Tag.Get("json"), ","); n == key {
			panic(fmt.Sprintf("trainer: section %q is Config's field %s", key, ct.Field(i).Name))
		}
	}
	sectionsMu.Lock()
	defer sectionsMu.Unlock()
	if _, dup := sections[key]; dup {
		panic(fmt.Sprintf("trainer: section %q registered twice", key))
	}
	sections[key] = sectionInfo{typ: t}
	sectionOrder = append(sectionOrder, key)
}

// section returns the registered section key.
func section(key string) (sectionInfo, bool) {
	sectionsMu.RLock()
	defer sectionsMu.RUnlock()
	s, ok := sections[key]
	return s, ok
}

// Section returns the settings c holds under key (the zero T when it holds
// none). T must be the type key was registered with.
func Section[T any](c Config, key string) T {
	var v T
	mustSectionType[T](key)
	if raw, ok := c.sections[key]; ok {
		if err := json.Unmarshal(raw, &v); err != nil {
			// c.sections only ever holds JSON written from a T.
			panic(fmt.Sprintf("trainer: section %q: %v", key, err))
		}
	}
	return v
}

// WithSection returns c holding v under key (without it when v is zero, as
// report.json leaves zero settings out). c itself is not changed, nor any
// Config that shares its sections.
func WithSection[T any](c Config, key string, v T) Config {
	mustSectionType[T](key)
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("trainer: section %q: %v", key, err))
	}
	c.sections = maps.Clone(c.sections)
	if reflect.ValueOf(v).IsZero() {
		delete(c.sections, key)
	} else {
		if c.sections == nil {
			c.sections = map[string]json.RawMessage{}
		}
		c.sections[key] = raw
	}
	return c
}

// mustSectionType panics unless key is registered with type T: a
// programming error in the package that owns key.
func mustSectionType[T any](key string) {
	s, ok := section(key)
	if !ok {
		panic(fmt.Sprintf("trainer: section %q is not registered", key))
	}
	if s.typ != reflect.TypeFor[T]() {
		panic(fmt.Sprintf("trainer: section %q holds %v, not %v", key, s.typ, reflect.TypeFor[T]()))
	}
}

// configFields is Config without its methods, so that encoding/json
// handles its own fields.
type configFields Config

// MarshalJSON writes Config's fields and then its sections, each under its
// key, in the order they were registered.
func (c Config) MarshalJSON() ([]byte, error) {
	raw, err := json.Marshal(configFields(c))
	if err != nil || len(c.sections) == 0 {
		return raw, err
	}
	sectionsMu.RLock()
	order := slices.Clone(sectionOrder)
	sectionsMu.RUnlock()
	var b bytes.Buffer
	b.Write(raw[:len(raw)-1]) // without the closing brace
	for _, key := range order {
		v, ok := c.sections[key]
		if !ok {
			continue
		}
		k, _ := json.Marshal(key)
		b.WriteByte(',')
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes, as encoding/json reads a
// struct: keys are matched without regard to case and unknown keys are
// ignored (decodeConfigStrict refuses them). Like Config's own fields, a
// section's settings that the JSON leaves out keep the values c held.
func (c *Config) UnmarshalJSON(data []byte) error { return decodeConfig(data, c, false) }

// decodeConfig decodes a Config JSON into c, its own fields and then its
// sections; strict refuses keys that neither Config nor a registered
// section (nor the section's type) has.
func decodeConfig(data []byte, c *Config, strict bool) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return err
	}
	if top == nil { // JSON null: nothing to change
		return nil
	}
	own := map[string]json.RawMessage{}
	secs := maps.Clone(c.sections)
	for name, v := range top {
		key, s, ok := sectionFold(name)
		if !ok {
			own[name] = v
			continue
		}
		p := reflect.New(s.typ)
		if old, ok := secs[key]; ok {
			if err := json.Unmarshal(old, p.Interface()); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
		if err := decodeJSON(v, p.Interface(), strict); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if secs == nil {
			secs = map[string]json.RawMessage{}
		}
		if p.Elem().IsZero() {
			delete(secs, key)
			continue
		}
		raw, err := json.Marshal(p.Interface())
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		secs[key] = raw
	}
	rest, err := json.Marshal(own)
	if err != nil {
		return err
	}
	if err := decodeJSON(rest, (*configFields)(c), strict); err != nil {
		return err
	}
	c.sections = secs
	return nil
}

// sectionFold finds the registered section whose key is name without
// regard to case (as encoding/json matches a struct's keys).
func sectionFold(name string) (string, sectionInfo, bool) {
	sectionsMu.RLock()
	defer sectionsMu.RUnlock()
	if s, ok := sections[name]; ok {
		return name, s, true
	}
	for key, s := range sections {
		if strings.EqualFold(key, name) {
			return key, s, true
		}
	}
	return "", sectionInfo{}, false
}

// decodeJSON is json.Unmarshal, refusing unknown keys when strict.
func decodeJSON(raw []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if strict {
		dec.DisallowUnknownFields()
	}
	return dec.Decode(v)
}

// WithoutSections returns c holding only the sections named in keep: what a
// pipeline records as the configuration it ran, without settings of other
// algorithms it did not read.
func WithoutSections(c Config, keep ...string) Config {
	secs := map[string]json.RawMessage{}
	for _, k := range keep {
		if v, ok := c.sections[k]; ok {
			secs[k] = v
		}
	}
	c.sections = nil
	if len(secs) > 0 {
		c.sections = secs
	}
	return c
}
