package trainer

import (
	"errors"
	"strings"
	"testing"
)

// TestKindsValidate: every constant of each kind of Config is valid, and a
// bad value is refused with FieldErrors naming the Config field and the
// message Config.Validate gave when the kinds were plain strings.
func TestKindsValidate(t *testing.T) {
	// This test binary links package fermi (the package's external
	// tests import it): unlink it here, as a program without the import.
	if c, ok := algorithms[algoFermi]; ok {
		delete(algorithms, algoFermi)
		defer func() { algorithms[algoFermi] = c }()
	}
	for _, tc := range []struct {
		name  string
		err   error
		field string // "" = valid
		msg   string
	}{
		{"AlgoSGD", AlgoSGD.Validate(), "", ""},
		{"AlgoDPSGD", AlgoDPSGD.Validate(), "", ""},
		{"unknown algorithm", AlgoName("magic").Validate(), "Algo", `"magic" is unknown (algorithms: [`},
		{"empty algorithm", AlgoName("").Validate(), "Algo", `"" is unknown`},
		// A name whose package is not linked: the refusal names the import.
		{"unlinked algorithm", algoFermi.Validate(), "Algo", `add import _ "github.com/fairdp/fairdp/fermi"`},
		{"DeviceCPU", DeviceCPU.Validate(), "", ""},
		{"DeviceCUDA", DeviceCUDA.Validate(), "", ""},
		{"bad device", DeviceKind("tpu").Validate(), "Device", `must be cpu or cuda (got "tpu")`},
		{"empty device", DeviceKind("").Validate(), "Device", `must be cpu or cuda (got "")`},
		{"DTypeFloat32", DTypeFloat32.Validate(), "", ""},
		{"DTypeFloat64", DTypeFloat64.Validate(), "", ""},
		{"bad dtype", DType("float16").Validate(), "DType", `must be float32 or float64 (got "float16")`},
		{"OptimizerSGD", OptimizerSGD.Validate(), "", ""},
		{"OptimizerAdam", OptimizerAdam.Validate(), "", ""},
		{"bad optimizer", OptimizerName("rmsprop").Validate(), "Optimizer", `must be sgd or adam (got "rmsprop")`},
		{"case matters", OptimizerName("Adam").Validate(), "Optimizer", `(got "Adam")`},
	} {
		if tc.field == "" {
			if tc.err != nil {
				t.Errorf("%s: %v, want valid", tc.name, tc.err)
			}
			continue
		}
		var fe FieldErrors
		if !errors.As(tc.err, &fe) || len(fe) != 1 || fe[0].Field != tc.field || !strings.Contains(fe[0].Msg, tc.msg) {
			t.Errorf("%s: %v, want one FieldError on %s saying %s", tc.name, tc.err, tc.field, tc.msg)
		}
	}
}

// TestConfigValidateKinds: Config.Validate refuses each bad kind with the
// kind's own error, all of them at once, in the order it always had.
func TestConfigValidateKinds(t *testing.T) {
	c := Defaults()
	c.DType, c.Optimizer, c.Device = "float16", "x", "y"
	err := c.Validate()
	want := `DType must be float32 or float64 (got "float16"); Optimizer must be sgd or adam (got "x"); Device must be cpu or cuda (got "y")`
	if err == nil || err.Error() != want {
		t.Errorf("Validate: %v\nwant %s", err, want)
	}
	c = Defaults()
	for _, d := range []DType{DTypeFloat32, DTypeFloat64} {
		for _, o := range []OptimizerName{OptimizerSGD, OptimizerAdam} {
			c.DType, c.Optimizer, c.Device = d, o, DeviceCPU
			if err := c.Validate(); err != nil {
				t.Errorf("%s %s: %v", d, o, err)
			}
		}
	}
}

// TestKindsJSON: the kinds are written as the strings report.json always
// held, and read back from them.
func TestKindsJSON(t *testing.T) {
	c := Defaults()
	c.Algo, c.DType, c.Optimizer, c.Device = AlgoDPSGD, DTypeFloat64, OptimizerSGD, DeviceCUDA
	raw, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"algorithm":"dpsgd"`, `"dtype":"float64"`, `"optimizer":"sgd"`, `"device":"cuda"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("config JSON lacks %s: %s", want, raw)
		}
	}
	back := Defaults()
	if err := decodeConfigStrict(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Algo != c.Algo || back.DType != c.DType || back.Optimizer != c.Optimizer || back.Device != c.Device {
		t.Errorf("read back %s %s %s %s", back.Algo, back.DType, back.Optimizer, back.Device)
	}
}
