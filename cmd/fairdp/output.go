package main

// Output helpers shared by the commands.

import (
	"encoding/json"
	"io"
	"math"
)

// writeJSON writes v as indented JSON, the form every --json answer takes.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// roundUp rounds x > 0 up to the given number of significant digits.
func roundUp(x float64, digits int) float64 {
	scale := math.Pow(10, float64(digits-1)-math.Floor(math.Log10(x)))
	up := math.Ceil(x*scale) / scale
	if up < x { // the division rounded below x
		up = math.Nextafter(up, math.Inf(1))
	}
	return up
}
