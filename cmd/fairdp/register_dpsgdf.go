package main

// DPSGD-F and Naïve register --algo dpsgdf, --algo naive and the
// dpsgdf-* presets with the trainer from their package's init.
import _ "github.com/fairdp/fairdp/dpsgdf"
