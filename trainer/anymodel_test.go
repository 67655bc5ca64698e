package trainer

import (
	"reflect"
	"testing"

	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
)

// TestJobModelIsTyped: Job.Model takes a Model of either element type and
// nothing else, so that a spec, a data set or a graph not yet lowered put
// there fails to compile rather than when the run starts (it was an any).
func TestJobModelIsTyped(t *testing.T) {
	f, ok := reflect.TypeOf(Job{}).FieldByName("Model")
	if !ok {
		t.Fatal("Job has no Model field")
	}
	if f.Type.Kind() != reflect.Interface || f.Type.NumMethod() == 0 {
		t.Fatalf("Job.Model is %v, want an interface with methods (AnyModel)", f.Type)
	}
	for _, v := range []any{"logistic", models.Spec{}, &loaders.Dataset{}, []float32{1}} {
		if reflect.TypeOf(v).AssignableTo(f.Type) {
			t.Errorf("a %T can be put in Job.Model", v)
		}
	}
	for _, v := range []any{(*models.Model[float32])(nil), (*models.Model[float64])(nil)} {
		if !reflect.TypeOf(v).AssignableTo(f.Type) {
			t.Errorf("a %T cannot be put in Job.Model", v)
		}
	}
}
