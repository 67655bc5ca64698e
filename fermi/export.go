package fermi

// WGrad is W's ascent direction from the last Step, before λ and η_W: the
// estimate of mean_B ∇_Wψ, clipped and noised for private runs (the
// release is a copy). It is exported for SteFFLe, whose silos send this
// direction to the server instead of taking the ascent step themselves.
func (a *DPFERMI[T]) WGrad() []float64 { return append([]float64(nil), a.w.Grad...) }
