package main

// SteFFLe (--algo steffle, fairdp silo, fairdp federate) registers itself with the trainer.
import _ "github.com/fairdp/fairdp/fermi/federated"
