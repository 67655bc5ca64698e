package trainer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
)

// Extras is report.json's "extra": each method family's typed result under
// the family's key (extra.fermi is a fermi.Result, extra.tune a TuneResult,
// …). The trainer cannot name the families' types (their packages import
// it), so the map holds them as values and each family exports an accessor
// that returns its own type (fermi.ResultOf, dpsgdf.ResultOf, …), built on
// ExtraOf.
//
// A report read from a file holds each key's JSON (json.RawMessage) until
// an accessor decodes it into the family's type, so a report.json from
// before a family's type changed still reads: unknown keys are kept, not
// dropped.
type Extras map[string]any

// InlineExtra is implemented by a family result whose fields sit at the
// top of "extra" rather than under its key: DPSGD-F's and Naïve's, as
// report files have always had them.
type InlineExtra interface {
	InlineExtra()
}

// MarshalJSON writes each result under its key, and an InlineExtra's fields
// at the top level; keys come out sorted, as a map's always have. A field
// of an inline result that is also a key is an error, never an overwrite.
func (e Extras) MarshalJSON() ([]byte, error) {
	if e == nil {
		return []byte("null"), nil
	}
	flat := make(map[string]json.RawMessage, len(e))
	var inline []string
	for k, v := range e {
		if _, ok := v.(InlineExtra); ok {
			inline = append(inline, k)
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("extra.%s: %w", k, err)
		}
		flat[k] = raw
	}
	for _, k := range inline {
		var fields map[string]json.RawMessage
		raw, err := json.Marshal(e[k])
		if err == nil {
			err = json.Unmarshal(raw, &fields)
		}
		if err != nil {
			return nil, fmt.Errorf("extra.%s (inline): %w", k, err)
		}
		for f, fv := range fields {
			if _, dup := flat[f]; dup {
				return nil, fmt.Errorf("extra.%s: field %q is taken twice", k, f)
			}
			flat[f] = fv
		}
	}
	return json.Marshal(flat)
}

// UnmarshalJSON keeps each key's JSON as a json.RawMessage for the
// family's accessor to decode.
func (e *Extras) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw == nil {
		*e = nil
		return nil
	}
	*e = make(Extras, len(raw))
	for k, v := range raw {
		(*e)[k] = v
	}
	return nil
}

// SetExtra stores a family's result under key.
func (r *Report) SetExtra(key string, v any) {
	if r.Extra == nil {
		r.Extra = Extras{}
	}
	r.Extra[key] = v
}

// ExtraOf is the result stored under key as an R: the value a run stored,
// or, in a report read from a file, the key's JSON decoded into an R, which
// must know every field (for an InlineExtra R, the whole "extra" object,
// other keys ignored). ok is false when the report has no such result or
// it does not decode into an R.
func ExtraOf[R any](rep *Report, key string) (res R, ok bool) {
	if rep == nil || rep.Extra == nil {
		return res, false
	}
	v, found := rep.Extra[key]
	if r, typed := v.(R); found && typed {
		return r, true
	}
	var raw []byte
	if isInline[R]() {
		if found {
			return res, false // a value of another type under the key
		}
		onlyRaw := maps.Clone(rep.Extra)
		for k, v := range onlyRaw {
			if _, isRaw := v.(json.RawMessage); !isRaw {
				delete(onlyRaw, k)
			}
		}
		if len(onlyRaw) == 0 {
			return res, false
		}
		var err error
		if raw, err = json.Marshal(map[string]any(onlyRaw)); err != nil {
			return res, false
		}
	} else {
		r, isRaw := v.(json.RawMessage)
		if !found || !isRaw {
			return res, false
		}
		raw = r
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if !isInline[R]() {
		// A keyed result is the key's whole object: a field R lacks means
		// the JSON is another type's (a federation's extra.steffle read as a
		// one-process run's).
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&res); err != nil {
		var zero R
		return zero, false
	}
	return res, true
}

// isInline says whether R (a pointer type, as accessors use) implements
// InlineExtra.
func isInline[R any]() bool {
	var zero R
	_, ok := any(zero).(InlineExtra)
	return ok
}

// EvalExtra is report.json's extra.eval: which checkpoint `fairdp eval`
// scored, and on what records (evalData.Scored). EvaluateCheckpoint's
// EvalResult is the whole evaluation; this is the part a report carries.
type EvalExtra struct {
	Checkpoint string `json:"checkpoint"`
	Scored     string `json:"scored,omitempty"`
}

// EvalResultOf is an eval report's extra.eval (nil for other reports).
func EvalResultOf(rep *Report) *EvalExtra {
	r, _ := ExtraOf[*EvalExtra](rep, "eval")
	return r
}

// TuneResultOf is a tuned run's extra.tune (nil for other reports).
func TuneResultOf(rep *Report) *TuneResult {
	if r, ok := ExtraOf[TuneResult](rep, "tune"); ok {
		return &r
	}
	return nil
}

// ERMIResult is implemented by the family results that measure the
// exponential Rényi mutual information of the model's test predictions
// (DP-FERMI's and one-process SteFFLe's): sweep.csv's test_ermi column.
type ERMIResult interface {
	TestERMI() float64
}

// testERMI is the test ERMI a family result in rep reports (ok false when
// none does).
func testERMI(rep *Report) (ermi float64, ok bool) {
	for _, v := range rep.Extra {
		if r, is := v.(ERMIResult); is {
			return r.TestERMI(), true
		}
	}
	return 0, false
}
