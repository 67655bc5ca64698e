package cuda

import (
	"errors"
	"fmt"
	"math"
)

// DeviceMLP is a classifier that lives on a Device: Linear → ReLU → … →
// Linear with one logit and the sigmoid cross-entropy (two classes) or one
// logit per class and the softmax cross-entropy: fairdp's "logistic" model
// when there is no hidden layer, its "mlp" otherwise. Parameters,
// activations, the layers' taps, per-sample norms, gradients and the step's
// scratch stay in device memory for the model's life; a training step
// uploads only the batch's inputs and labels and brings back two ints (the
// clip checks, before any update) and one float (the summed loss).
//
// Layout is nn.Linear's: weights in×out row-major, then the bias. Row-major
// n×k host matrices are column-major k×n matrices to cuBLAS, so a layer's
// forward Y = X·W + b is Sgemm(N, N, out, n, in, W, X) followed by the
// bias kernel.
//
// It is the device-resident half of issue 16; the trainer does not use it
// yet (see bench/results/cuda.md for what remains).
type DeviceMLP struct {
	arena       // dev and the model's allocations
	sizes []int // in, hidden…, logits (1 for two classes)
	w, b  []DevicePtr
	gw    []DevicePtr
	gb    []DevicePtr
	// Batch buffers, grown with the largest batch: a[0] the input, a[l+1]
	// layer l's output (after ReLU for hidden layers), dz[l] ∂L/∂z of layer
	// l, da scratch for ∂L/∂a.
	capacity int
	a, dz    []DevicePtr
	da       DevicePtr
	labels   DevicePtr
	loss     DevicePtr
	sq       DevicePtr
	norms    DevicePtr
	scale    DevicePtr
	ones     DevicePtr
	bad      DevicePtr
	sum      DevicePtr
	params   int // arena mark: what comes after are batch buffers
	released bool
}

// DPSGDStep is one DP-SGD step's settings, as trainer.DPSGD applies them:
// every sample's whole gradient clipped to Clip, N(0, NoiseStd²) added to
// each coordinate of the clipped sum (NoiseStd = σ·C), the result scaled by
// Scale (1 / expected batch size) and applied by SGD with rate LR. The noise
// is Philox4x32-10 under Seed (drawn fresh per step with NewNoiseSeed),
// parameter buffer k (weights and biases in layer order) on stream k.
type DPSGDStep struct {
	Clip, NoiseStd, Scale float64
	LR                    float32
	Seed                  NoiseSeed
}

// NewDeviceMLP allocates the model on dev with layer sizes in, hidden…,
// logits (1 for two classes, else one per class, at least 3) and copies the
// initial parameters there: params[2l] is layer l's weight
// (in×out), params[2l+1] its bias.
func NewDeviceMLP(dev Device, sizes []int, params [][]float32) (*DeviceMLP, error) {
	if len(sizes) < 2 || sizes[len(sizes)-1] == 2 {
		return nil, fmt.Errorf("cuda: DeviceMLP sizes %v: want in, hidden…, logits with 1 logit for two classes (fairdp's layout)", sizes)
	}
	for _, s := range sizes {
		if s < 1 || s > maxElems/1024 {
			return nil, fmt.Errorf("cuda: DeviceMLP sizes %v: each must be in 1..%d", sizes, maxElems/1024)
		}
	}
	layers := len(sizes) - 1
	if len(params) != 2*layers {
		return nil, fmt.Errorf("cuda: DeviceMLP: %d parameter buffers, want %d", len(params), 2*layers)
	}
	m := &DeviceMLP{arena: arena{dev: dev}, sizes: append([]int(nil), sizes...)}
	for l := range layers {
		in, out := sizes[l], sizes[l+1]
		if len(params[2*l]) != in*out || len(params[2*l+1]) != out {
			m.Close()
			return nil, fmt.Errorf("cuda: DeviceMLP layer %d: weight %d and bias %d values, want %d and %d",
				l, len(params[2*l]), len(params[2*l+1]), in*out, out)
		}
		var err error
		w, b, gw, gb := m.alloc(4*in*out, &err), m.alloc(4*out, &err), m.alloc(4*in*out, &err), m.alloc(4*out, &err)
		if err == nil {
			err = errors.Join(CopyIn(dev, w, params[2*l]), CopyIn(dev, b, params[2*l+1]))
		}
		if err != nil {
			m.Close()
			return nil, err
		}
		m.w, m.b, m.gw, m.gb = append(m.w, w), append(m.b, b), append(m.gw, gw), append(m.gb, gb)
	}
	var err error
	m.bad, m.sum = m.alloc(8, &err), m.alloc(4, &err)
	if err != nil {
		m.Close()
		return nil, err
	}
	m.params = m.mark()
	return m, nil
}

// grow makes the batch buffers hold n samples (a quarter more, so Poisson
// batch sizes settle quickly).
func (m *DeviceMLP) grow(n int) error {
	if n <= m.capacity {
		return nil
	}
	if err := m.dev.Synchronize(); err != nil {
		return err
	}
	m.capacity = 0
	if err := m.freeFrom(m.params); err != nil { // parameters, gradients, flags stay
		return err
	}
	c := n + n/4
	var err error
	layers := len(m.sizes) - 1
	m.a, m.dz = make([]DevicePtr, layers+1), make([]DevicePtr, layers)
	widest := 0
	for l := range m.sizes {
		m.a[l] = m.alloc(4*c*m.sizes[l], &err)
		widest = max(widest, m.sizes[l])
		if l < layers {
			m.dz[l] = m.alloc(4*c*m.sizes[l+1], &err)
		}
	}
	m.da = m.alloc(4*c*widest, &err)
	m.labels, m.loss = m.alloc(4*c, &err), m.alloc(4*c, &err)
	m.sq, m.norms, m.scale, m.ones = m.alloc(8*c, &err), m.alloc(8*c, &err), m.alloc(4*c, &err), m.alloc(4*c, &err)
	if err == nil {
		err = m.fill(m.ones, math.Float32bits(1), c)
	}
	if err != nil {
		return err
	}
	m.capacity = c
	return nil
}

// fill sets count 32-bit words at p to v.
func (m *DeviceMLP) fill(p DevicePtr, v uint32, count int) error {
	return m.launch("fairdp_fill_u32", count, Ptr(p), U32(v), Int(count))
}

// launch runs an element-wise kernel over units, one thread per unit.
func (m *DeviceMLP) launch(kernel string, units int, args ...Arg) error {
	return launch1(m.dev, kernel, units, args...)
}

// forward computes the logits of the n samples in a[0] into a[layers]; they
// stay on the device (Logits copies them out).
func (m *DeviceMLP) forward(n int) error {
	d := m.dev
	layers := len(m.sizes) - 1
	for l := range layers {
		in, out := m.sizes[l], m.sizes[l+1]
		if err := d.Sgemm(NoTrans, NoTrans, out, n, in, 1, m.w[l], out, m.a[l], in, 0, m.a[l+1], out); err != nil {
			return err
		}
		if err := m.launch("fairdp_bias_add", n*out, Ptr(m.a[l+1]), Ptr(m.b[l]), Int(n), Int(out), Int(1)); err != nil {
			return err
		}
		if l < layers-1 {
			if err := m.launch("fairdp_relu_forward", n*out, Ptr(m.a[l+1]), Ptr(m.a[l+1]), Int(n*out)); err != nil {
				return err
			}
		}
	}
	return nil
}

// classes is the number of labels: 2 for one logit.
func (m *DeviceMLP) classes() int { return max(2, m.sizes[len(m.sizes)-1]) }

// upload copies a batch and its labels (0..classes-1) to the device.
func (m *DeviceMLP) upload(x []float32, labels []int32) (int, error) {
	n := len(labels)
	if len(x) != n*m.sizes[0] {
		return 0, fmt.Errorf("cuda: DeviceMLP: %d input values for %d samples of %d features", len(x), n, m.sizes[0])
	}
	for i, y := range labels {
		if y < 0 || int(y) >= m.classes() {
			return 0, fmt.Errorf("cuda: DeviceMLP: sample %d has label %d, want 0..%d", i, y, m.classes()-1)
		}
	}
	if err := m.grow(n); err != nil {
		return 0, err
	}
	if err := CopyIn(m.dev, m.a[0], x); err != nil {
		return 0, err
	}
	return n, CopyIn(m.dev, m.labels, labels)
}

// Logits returns the model's logits for the samples x (n×in): n×logits.
func (m *DeviceMLP) Logits(x []float32) ([]float32, error) {
	n := len(x) / m.sizes[0]
	if _, err := m.upload(x, make([]int32, n)); err != nil {
		return nil, err
	}
	if err := m.forward(n); err != nil {
		return nil, err
	}
	z := make([]float32, n*m.sizes[len(m.sizes)-1])
	return z, CopyOut(m.dev, z, m.a[len(m.a)-1])
}

// Step runs one DP-SGD step on the batch x (n×in, row-major) with labels
// (0..classes-1) and returns the batch's summed loss before the update. An empty
// batch still adds noise and updates (a Poisson sample may be empty).
func (m *DeviceMLP) Step(x []float32, labels []int32, s DPSGDStep) (float64, error) {
	if err := checkNoise(s.NoiseStd); err != nil {
		return 0, err
	}
	if !(s.Clip > 0) || math.IsInf(s.Clip, 0) || !(s.Scale > 0) || math.IsInf(s.Scale, 0) || !(s.LR >= 0) {
		return 0, fmt.Errorf("cuda: DPSGDStep Clip %v, Scale %v, LR %v: want finite Clip and Scale > 0, LR ≥ 0", s.Clip, s.Scale, s.LR)
	}
	n, err := m.upload(x, labels)
	if err != nil {
		return 0, err
	}
	d := m.dev
	layers := len(m.sizes) - 1
	if err := m.forward(n); err != nil {
		return 0, err
	}
	// Loss and ∂L/∂z of the logits; the summed loss as a 1×n·n×1 product.
	if k := m.sizes[layers]; k == 1 {
		err = m.launch("fairdp_sigmoid_bce", n, Ptr(m.loss), Ptr(m.dz[layers-1]), Ptr(m.a[layers]), Ptr(m.labels), Int(n))
	} else {
		err = m.launch("fairdp_softmax_ce", n, Ptr(m.loss), Ptr(m.dz[layers-1]), Ptr(m.a[layers]), Ptr(m.labels), Int(n), Int(k))
	}
	if err != nil {
		return 0, err
	}
	if err := d.Sgemm(NoTrans, NoTrans, 1, 1, n, 1, m.loss, 1, m.ones, max(n, 1), 0, m.sum, 1); err != nil {
		return 0, err
	}
	// Backward: taps a[l] (inputs) and dz[l]; ∂L/∂a[l] = dz[l]·W[l]ᵀ, gated
	// by the ReLU's output a[l].
	for l := layers - 1; l > 0; l-- {
		in, out := m.sizes[l], m.sizes[l+1]
		if err := d.Sgemm(Trans, NoTrans, in, n, out, 1, m.w[l], out, m.dz[l], out, 0, m.da, in); err != nil {
			return 0, err
		}
		if err := m.launch("fairdp_relu_backward", n*in, Ptr(m.dz[l-1]), Ptr(m.a[l]), Ptr(m.da), Int(n*in)); err != nil {
			return 0, err
		}
	}
	// Joint per-sample norms over all layers, clip factors.
	if err := m.fill(m.sq, 0, 2*n); err != nil {
		return 0, err
	}
	for l := range layers {
		if n == 0 {
			break
		}
		if err := d.Launch("fairdp_linear_sqnorms", launchShape(n, true), D1(block), 0, Ptr(m.sq), Ptr(m.a[l]), Ptr(m.dz[l]),
			Int(n), Int(m.sizes[l]), Int(m.sizes[l+1]), Int(1)); err != nil {
			return 0, err
		}
	}
	if err := m.fill(m.bad, uint32(n), 2); err != nil {
		return 0, err
	}
	if err := m.launch("fairdp_clip_factors", n, Ptr(m.scale), Ptr(m.norms), Ptr(m.bad), Ptr(m.sq), Ptr(0), F64(s.Clip), Int(n)); err != nil {
		return 0, err
	}
	// The clip check comes back before anything is updated, as on the CPU.
	bad := make([]int32, 2)
	if err := CopyOut(d, bad, m.bad); err != nil {
		return 0, err
	}
	if int(bad[0]) < n {
		return 0, fmt.Errorf("cuda: sample %d has a gradient norm² that is negative or not finite; the loss is not finite", bad[0])
	}
	// Clipped sums: dz rows scaled in place, then dW = aᵀ·dz and db = dzᵀ·1.
	for l := range layers {
		in, out := m.sizes[l], m.sizes[l+1]
		if err := m.launch("fairdp_scale_rows", n*out, Ptr(m.dz[l]), Ptr(m.dz[l]), Ptr(m.scale), Int(n), Int(out)); err != nil {
			return 0, err
		}
		if err := d.Sgemm(NoTrans, Trans, out, in, n, 1, m.dz[l], out, m.a[l], in, 0, m.gw[l], out); err != nil {
			return 0, err
		}
		if err := d.Sgemm(NoTrans, NoTrans, out, 1, n, 1, m.dz[l], out, m.ones, max(n, 1), 0, m.gb[l], out); err != nil {
			return 0, err
		}
	}
	// Noise, scale and update, buffer k on Philox stream k.
	for l := range layers {
		for j, buf := range [][2]DevicePtr{{m.w[l], m.gw[l]}, {m.b[l], m.gb[l]}} {
			count := m.sizes[l+1]
			if j == 0 {
				count *= m.sizes[l]
			}
			seed := s.Seed
			seed.Stream = uint32(2*l + j)
			if s.NoiseStd != 0 {
				if err := m.launch("fairdp_add_gaussian", count/2+count%2, Ptr(buf[1]), Int(count), F64(s.NoiseStd),
					U32(seed.Key[0]), U32(seed.Key[1]), U32(seed.Nonce[0]), U32(seed.Nonce[1]), U32(seed.Stream)); err != nil {
					return 0, err
				}
			}
			if err := m.launch("fairdp_sgd_step", count, Ptr(buf[0]), Ptr(buf[1]), Int(count), F32(float32(s.Scale)), F32(s.LR)); err != nil {
				return 0, err
			}
		}
	}
	sum := make([]float32, 1)
	if n > 0 {
		if err := CopyOut(d, sum, m.sum); err != nil {
			return 0, err
		}
	}
	return float64(sum[0]), d.Synchronize()
}

// Params copies the parameters to the host in NewDeviceMLP's order.
func (m *DeviceMLP) Params() ([][]float32, error) {
	var out [][]float32
	for l := range m.w {
		in, o := m.sizes[l], m.sizes[l+1]
		w, b := make([]float32, in*o), make([]float32, o)
		if err := errors.Join(CopyOut(m.dev, w, m.w[l]), CopyOut(m.dev, b, m.b[l])); err != nil {
			return nil, err
		}
		out = append(out, w, b)
	}
	return out, nil
}

// Close frees the model's device memory (not the device).
func (m *DeviceMLP) Close() error {
	if m.released {
		return nil
	}
	m.released = true
	return m.freeFrom(0)
}
