package federated_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/fairdp/fairdp/fermi/federated"
)

// Split six records over two silos by age with full heterogeneity (h = 1):
// each silo gets one age range.
func ExampleHeterogeneous() {
	age := []float64{52, 31, 23, 44, 27, 19}
	parts, err := federated.Heterogeneous(age, 2, 1, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	fmt.Println(parts)
	// Output: [[2 4 5] [0 1 3]]
}

// One silo (2) holds every record's sensitive attribute; silos 0 and 1 hold
// the features and labels. Each feature silo's records form one lane that
// silo 2 runs with its own noise and accountant.
func ExampleMapping_Lanes() {
	m, err := federated.SensitiveSiloMapping(5, [][]int{{0, 3}, {1, 2, 4}}, 2)
	if err != nil {
		panic(err)
	}
	for _, l := range m.Lanes() {
		fmt.Printf("features on silo %d, s on silo %d: records %v\n", l.Features, l.Sensitive, l.Records)
	}
	// Output:
	// features on silo 0, s on silo 2: records [0 3]
	// features on silo 1, s on silo 2: records [1 2 4]
}
