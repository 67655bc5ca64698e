package main

// DP-FERMI registers --algo fermi and its presets from its init.
import _ "github.com/fairdp/fairdp/fermi"
