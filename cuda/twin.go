package cuda

import (
	"fmt"
	"math"
)

// CPU is the twin of the GPU kernels: every method performs the IEEE
// operations of the kernel of the same name in the same order, so both
// backends return the same bits. It is single-threaded and slow by design
// (a reference, not fairdp's CPU engine: that is package nn with dpops).
type CPU struct{}

// block is the kernels' FAIRDP_BLOCK: the thread count whose strided
// partial sums and tree reduction the twins reproduce.
const block = 256

var _ Backend = CPU{}

// Name implements Backend.
func (CPU) Name() string { return "cpu" }

// Close implements Backend (nothing to release).
func (CPU) Close() error { return nil }

// sqSumBlock is blockSum(sqSumStrided(x)) of the kernels: thread t sums
// x[t], x[t+256], … with fused steps, then the tree adds partial t+s into t
// for s = 128, 64, …, 1.
func sqSumBlock(x []float32) float64 {
	var part [block]float64
	for t := 0; t < block && t < len(x); t++ {
		acc := 0.0
		for j := t; j < len(x); j += block {
			v := float64(x[j])
			acc = math.FMA(v, v, acc)
		}
		part[t] = acc
	}
	return treeSum(&part)
}

// treeSum is the kernels' shared-memory tree over one block's partial sums.
func treeSum(part *[block]float64) float64 {
	for s := block / 2; s > 0; s >>= 1 {
		for t := 0; t < s; t++ {
			part[t] = part[t] + part[t+s]
		}
	}
	return part[0]
}

// convDot is the kernels' convDot: Σ_p brow[p]·urow[p] in double, p ascending.
func convDot(brow, urow []float32) float64 {
	g := 0.0
	for p, v := range brow {
		g = math.FMA(float64(v), float64(urow[p]), g)
	}
	return g
}

// LinearSqNorms implements Backend (kernel fairdp_linear_sqnorms).
func (CPU) LinearSqNorms(sq []float64, a, b []float32, n, in, out int, bias bool) error {
	const fn = "LinearSqNorms"
	if err := checkLinear(fn, a, b, n, in, out); err != nil {
		return err
	}
	if err := checkLen(fn, "sq", sq, n); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		na := sqSumBlock(a[i*in : (i+1)*in])
		nb := sqSumBlock(b[i*out : (i+1)*out])
		g := float64(na * nb)
		if bias {
			g = g + nb
		}
		sq[i] = sq[i] + g
	}
	return nil
}

// Im2col implements Backend (kernel fairdp_im2col).
func (CPU) Im2col(u, x []float32, g ConvGeom, n int) error {
	if err := checkIm2col(u, x, g, n); err != nil {
		return err
	}
	ckk, hw := g.CKK(), g.HW()
	_, outW := g.OutHW()
	for idx := range u {
		pos := idx % hw
		row := idx / hw
		r, i := row%(ckk+1), row/(ckk+1)
		if r == ckk {
			u[idx] = 1
			continue
		}
		ci, ki, kj := r/(g.K*g.K), (r/g.K)%g.K, r%g.K
		oh, ow := pos/outW, pos%outW
		ih, iw := oh*g.Stride-g.Pad+ki, ow*g.Stride-g.Pad+kj
		v := float32(0)
		if ih >= 0 && ih < g.InH && iw >= 0 && iw < g.InW {
			v = x[((i*g.InC+ci)*g.InH+ih)*g.InW+iw]
		}
		u[idx] = v
	}
	return nil
}

// Col2im implements Backend (kernel fairdp_col2im).
func (CPU) Col2im(dx, du []float32, g ConvGeom, n int) error {
	if err := checkCol2im(dx, du, g, n); err != nil {
		return err
	}
	ckk, hw := g.CKK(), g.HW()
	outH, outW := g.OutHW()
	for idx := range dx {
		iw, ih := idx%g.InW, (idx/g.InW)%g.InH
		ci, i := (idx/(g.InW*g.InH))%g.InC, idx/(g.InW*g.InH*g.InC)
		dui := du[i*ckk*hw : (i+1)*ckk*hw]
		acc := 0.0
		for ki := 0; ki < g.K; ki++ {
			th := ih + g.Pad - ki
			if th < 0 || th%g.Stride != 0 || th/g.Stride >= outH {
				continue
			}
			for kj := 0; kj < g.K; kj++ {
				tw := iw + g.Pad - kj
				if tw < 0 || tw%g.Stride != 0 || tw/g.Stride >= outW {
					continue
				}
				acc = acc + float64(dui[((ci*g.K+ki)*g.K+kj)*hw+(th/g.Stride)*outW+tw/g.Stride])
			}
		}
		dx[idx] = float32(acc)
	}
	return nil
}

func checkCol2im(dx, du []float32, g ConvGeom, n int) error {
	const fn = "Col2im"
	if err := g.Validate(); err != nil {
		return err
	}
	if err := checkDims(fn, n, g.CKK(), g.HW()); err != nil {
		return err
	}
	if err := checkDims(fn, n, g.InC, g.InH, g.InW); err != nil {
		return err
	}
	if err := checkLen(fn, "unfolded gradient du", du, n*g.CKK()*g.HW()); err != nil {
		return err
	}
	return checkLen(fn, "input gradient dx", dx, n*g.InC*g.InH*g.InW)
}

func checkIm2col(u, x []float32, g ConvGeom, n int) error {
	const fn = "Im2col"
	if err := g.Validate(); err != nil {
		return err
	}
	if err := checkDims(fn, n, g.CKK()+1, g.HW()); err != nil {
		return err
	}
	if err := checkDims(fn, n, g.InC, g.InH, g.InW); err != nil {
		return err
	}
	if err := checkLen(fn, "input x", x, n*g.InC*g.InH*g.InW); err != nil {
		return err
	}
	return checkLen(fn, "unfolded output u", u, n*(g.CKK()+1)*g.HW())
}

// ConvSqNorms implements Backend (kernels fairdp_conv_sqnorms_part, then
// fairdp_rows_sum_add over the output channels).
func (CPU) ConvSqNorms(sq []float64, u, b []float32, g ConvGeom, n int) error {
	const fn = "ConvSqNorms"
	if err := checkConv(fn, u, b, g, n); err != nil {
		return err
	}
	if err := checkLen(fn, "sq", sq, n); err != nil {
		return err
	}
	kk, hw := g.CKK()+1, g.HW()
	part := make([]float64, g.OutC)
	for i := 0; i < n; i++ {
		ui := u[i*kk*hw : (i+1)*kk*hw]
		for o := range part {
			brow := b[(i*g.OutC+o)*hw : (i*g.OutC+o+1)*hw]
			var acc [block]float64
			for t := 0; t < block && t < kk; t++ {
				a := 0.0
				for r := t; r < kk; r += block {
					d := convDot(brow, ui[r*hw:(r+1)*hw])
					a = math.FMA(d, d, a)
				}
				acc[t] = a
			}
			part[o] = treeSum(&acc)
		}
		s := 0.0
		for _, v := range part {
			s = s + v
		}
		sq[i] = sq[i] + s
	}
	return nil
}

// ClipFactors implements Backend (kernel fairdp_clip_factors).
func (CPU) ClipFactors(scale []float32, norms, sq, bounds []float64, flat float64) error {
	if err := checkClip(scale, norms, sq, bounds); err != nil {
		return err
	}
	n := len(sq)
	badNorm, badBound := n, n
	for i, s := range sq {
		if !(s >= 0) || math.IsInf(s, 0) {
			badNorm = min(badNorm, i)
			continue
		}
		g := math.Sqrt(s)
		norms[i] = g
		c := flat
		if bounds != nil {
			c = bounds[i]
		}
		if !(c > 0) {
			badBound = min(badBound, i)
			continue
		}
		f := 1.0
		if !(g <= c) {
			f = c / g
		}
		scale[i] = float32(f)
	}
	return clipError(sq, bounds, flat, badNorm, badBound)
}

// ScaleRows implements Backend (kernel fairdp_scale_rows).
func (CPU) ScaleRows(dst, b, scale []float32, rowLen int) error {
	if err := checkScaleRows(dst, b, scale, rowLen); err != nil {
		return err
	}
	for k, v := range b {
		dst[k] = scale[k/rowLen] * v
	}
	return nil
}

func checkScaleRows(dst, b, scale []float32, rowLen int) error {
	const fn = "ScaleRows"
	if rowLen < 1 {
		return fmt.Errorf("cuda.%s: row length %d, want ≥ 1", fn, rowLen)
	}
	n := len(scale)
	if err := checkDims(fn, n, rowLen); err != nil {
		return err
	}
	if err := checkLen(fn, "b", b, n*rowLen); err != nil {
		return err
	}
	return checkLen(fn, "dst", dst, n*rowLen)
}

// LinearClippedGrad implements Backend (kernel fairdp_linear_clipped_grad).
func (CPU) LinearClippedGrad(dw, db, a, b, scale []float32, n, in, out int) error {
	const fn = "LinearClippedGrad"
	if err := checkLinearGrad(fn, dw, db, a, b, scale, n, in, out); err != nil {
		return err
	}
	rows := in
	if db != nil {
		rows++
	}
	for idx := 0; idx < rows*out; idx++ {
		p, q := idx/out, idx%out
		acc := 0.0
		for i := 0; i < n; i++ {
			cb := float64(float64(scale[i]) * float64(b[i*out+q]))
			av := 1.0
			if p < in {
				av = float64(a[i*in+p])
			}
			acc = math.FMA(cb, av, acc)
		}
		if p < in {
			dw[idx] = float32(float64(dw[idx]) + acc)
		} else {
			db[q] = float32(float64(db[q]) + acc)
		}
	}
	return nil
}

func checkLinearGrad(fn string, dw, db, a, b, scale []float32, n, in, out int) error {
	if err := checkLinear(fn, a, b, n, in, out); err != nil {
		return err
	}
	if err := checkLen(fn, "scale", scale, n); err != nil {
		return err
	}
	if err := checkLen(fn, "weight gradient dw", dw, in*out); err != nil {
		return err
	}
	if db == nil {
		return nil
	}
	return checkLen(fn, "bias gradient db", db, out)
}

// ConvClippedGrad implements Backend (kernel fairdp_conv_clipped_grad).
func (CPU) ConvClippedGrad(dw, db, u, b, scale []float32, g ConvGeom, n int) error {
	const fn = "ConvClippedGrad"
	if err := checkConvGrad(fn, dw, db, u, b, scale, g, n); err != nil {
		return err
	}
	kk, hw := g.CKK()+1, g.HW()
	for idx := 0; idx < g.OutC*kk; idx++ {
		o, r := idx/kk, idx%kk
		acc := 0.0
		for i := 0; i < n; i++ {
			d := convDot(b[(i*g.OutC+o)*hw:(i*g.OutC+o+1)*hw], u[(i*kk+r)*hw:(i*kk+r+1)*hw])
			acc = math.FMA(float64(scale[i]), d, acc)
		}
		if r < kk-1 {
			dw[o*(kk-1)+r] = float32(float64(dw[o*(kk-1)+r]) + acc)
		} else {
			db[o] = float32(float64(db[o]) + acc)
		}
	}
	return nil
}

func checkConvGrad(fn string, dw, db, u, b, scale []float32, g ConvGeom, n int) error {
	if err := checkConv(fn, u, b, g, n); err != nil {
		return err
	}
	if err := checkDims(fn, g.OutC, g.CKK()+1); err != nil {
		return err
	}
	if err := checkLen(fn, "scale", scale, n); err != nil {
		return err
	}
	if err := checkLen(fn, "weight gradient dw", dw, g.OutC*g.CKK()); err != nil {
		return err
	}
	return checkLen(fn, "bias gradient db", db, g.OutC)
}

// AddGaussian implements Backend (kernel fairdp_add_gaussian).
func (CPU) AddGaussian(dst []float32, std float64, seed NoiseSeed) error {
	if err := checkNoise(std); err != nil {
		return err
	}
	if err := checkCount("AddGaussian", "dst", len(dst), len(dst)); err != nil {
		return err
	}
	if std == 0 {
		return nil
	}
	for p := 0; 2*p < len(dst); p++ {
		z0, z1 := noiseAt(seed, p)
		j := 2 * p
		dst[j] = float32(math.FMA(std, z0, float64(dst[j])))
		if j+1 < len(dst) {
			dst[j+1] = float32(math.FMA(std, z1, float64(dst[j+1])))
		}
	}
	return nil
}

// BiasAdd implements Backend (kernel fairdp_bias_add).
func (CPU) BiasAdd(y, bias []float32, n, channels, spatial int) error {
	const fn = "BiasAdd"
	if err := checkBias(fn, y, bias, n, channels, spatial); err != nil {
		return err
	}
	for idx := range y {
		y[idx] = y[idx] + bias[(idx/spatial)%channels]
	}
	return nil
}

func checkBias(fn string, y, bias []float32, n, channels, spatial int) error {
	if channels < 1 || spatial < 1 {
		return fmt.Errorf("cuda.%s: channels and spatial size must be ≥ 1, got %d and %d", fn, channels, spatial)
	}
	if err := checkDims(fn, n, channels, spatial); err != nil {
		return err
	}
	if err := checkLen(fn, "bias", bias, channels); err != nil {
		return err
	}
	return checkLen(fn, "y", y, n*channels*spatial)
}

// canonicalNaN is the NaN Go's max returns on amd64 whatever its NaN
// operand: the quiet NaN with a clear sign bit and no payload.
var canonicalNaN = math.Float32frombits(0x7fc00000)

// goMax is the kernels' goMax: Go's max, with the NaN result's bits spelled
// out (the Go spec leaves them open; the kernel must not copy the operand's).
func goMax(a, b float32) float32 {
	if a != a || b != b {
		return canonicalNaN
	}
	return max(a, b)
}

// ReLUForward implements Backend (kernel fairdp_relu_forward).
func (CPU) ReLUForward(y, x []float32) error {
	if err := checkLen("ReLUForward", "y", y, len(x)); err != nil {
		return err
	}
	for j, v := range x {
		y[j] = goMax(v, 0)
	}
	return nil
}

// ReLUBackward implements Backend (kernel fairdp_relu_backward).
func (CPU) ReLUBackward(dx, y, dy []float32) error {
	if err := checkReLUBackward(dx, y, dy); err != nil {
		return err
	}
	for j, g := range dy {
		mask := uint32(int32(0-math.Float32bits(y[j])) >> 31)
		dx[j] = math.Float32frombits(math.Float32bits(g) & mask)
	}
	return nil
}

func checkReLUBackward(dx, y, dy []float32) error {
	const fn = "ReLUBackward"
	if err := checkLen(fn, "y", y, len(dy)); err != nil {
		return err
	}
	return checkLen(fn, "dx", dx, len(dy))
}

// MaxPoolForward implements Backend (kernel fairdp_maxpool_forward).
func (CPU) MaxPoolForward(y []float32, arg []int32, x []float32, g PoolGeom, n int) error {
	if err := checkPool("MaxPoolForward", g, n, len(x), len(y), len(arg)); err != nil {
		return err
	}
	outH, outW := g.OutHW()
	out := outH * outW
	for idx := range y {
		p, j := idx/out, idx%out
		oh, ow := j/outW, j%outW
		xp := x[p*g.H*g.W : (p+1)*g.H*g.W]
		top := oh*g.K*g.W + ow*g.K
		mx := xp[top]
		for ki := 0; ki < g.K; ki++ {
			for kj := 0; kj < g.K; kj++ {
				mx = goMax(mx, xp[top+ki*g.W+kj])
			}
		}
		best := top
	search:
		for ki := 0; ki < g.K; ki++ {
			for kj := 0; kj < g.K; kj++ {
				if xp[top+ki*g.W+kj] == mx {
					best = top + ki*g.W + kj
					break search
				}
			}
		}
		y[idx] = mx
		arg[idx] = int32(best)
	}
	return nil
}

// MaxPoolBackward implements Backend (kernel fairdp_maxpool_backward).
func (CPU) MaxPoolBackward(dx, dy []float32, arg []int32, g PoolGeom, n int) error {
	if err := checkPool("MaxPoolBackward", g, n, len(dx), len(dy), len(arg)); err != nil {
		return err
	}
	outH, outW := g.OutHW()
	out, in := outH*outW, g.H*g.W
	for idx := range dx {
		p, pos := idx/in, idx%in
		oh, ow := (pos/g.W)/g.K, (pos%g.W)/g.K
		v := float32(0)
		if oh < outH && ow < outW {
			o := p*out + oh*outW + ow
			if int(arg[o]) == pos {
				v = 0 + dy[o]
			}
		}
		dx[idx] = v
	}
	return nil
}

// stridedBlockSum is the kernels' strided-then-tree block reduction of
// len terms: thread t folds term(j, acc) over j = t, t+256, … from 0, then
// treeSum adds the partials.
func stridedBlockSum(length int, term func(j int, acc float64) float64) float64 {
	var part [block]float64
	for t := 0; t < block && t < length; t++ {
		acc := 0.0
		for j := t; j < length; j += block {
			acc = term(j, acc)
		}
		part[t] = acc
	}
	return treeSum(&part)
}

// GroupNormForward implements Backend (kernel fairdp_groupnorm_forward).
func (CPU) GroupNormForward(y, xhat []float32, invStd []float64, x, gamma, beta []float32, g GroupGeom, n int) error {
	if err := checkGroupNormForward(y, xhat, invStd, x, gamma, beta, g, n); err != nil {
		return err
	}
	hw, cpg, m := g.group()
	for unit := range n * g.Groups {
		off := unit * m
		xg := x[off : off+m]
		mean := stridedBlockSum(m, func(j int, acc float64) float64 { return acc + float64(xg[j]) }) / float64(m)
		v := stridedBlockSum(m, func(j int, acc float64) float64 {
			d := float64(xg[j]) - mean
			return math.FMA(d, d, acc)
		})
		inv := 1 / math.Sqrt(v/float64(m)+g.Eps)
		invStd[unit] = inv
		ch0 := unit % g.Groups * cpg
		for j, e := range xg {
			xh := float32((float64(e) - mean) * inv)
			ch := ch0 + j/hw
			xhat[off+j] = xh
			y[off+j] = float32(gamma[ch]*xh) + beta[ch]
		}
	}
	return nil
}

// GroupNormBackward implements Backend (kernel fairdp_groupnorm_backward).
func (CPU) GroupNormBackward(dx, ps, dy, xhat []float32, invStd []float64, gamma []float32, g GroupGeom, n int) error {
	if err := checkGroupNormBackward(dx, ps, dy, xhat, invStd, gamma, g, n); err != nil {
		return err
	}
	hw, cpg, m := g.group()
	for unit := range n * g.Groups {
		off := unit * m
		i, ch0 := unit/g.Groups, unit%g.Groups*cpg
		psi := ps[i*2*g.C : (i+1)*2*g.C]
		sdx, sdxx := 0.0, 0.0
		for k := range cpg {
			dyc, xhc := dy[off+k*hw:off+(k+1)*hw], xhat[off+k*hw:off+(k+1)*hw]
			dg := float32(stridedBlockSum(hw, func(j int, acc float64) float64 {
				return math.FMA(float64(dyc[j]), float64(xhc[j]), acc)
			}))
			db := float32(stridedBlockSum(hw, func(j int, acc float64) float64 { return acc + float64(dyc[j]) }))
			psi[ch0+k], psi[g.C+ch0+k] = dg, db
			gk := float64(gamma[ch0+k])
			sdxx = math.FMA(gk, float64(dg), sdxx)
			sdx = math.FMA(gk, float64(db), sdx)
		}
		if dx == nil {
			continue
		}
		inv, mdx, mdxx := invStd[unit], sdx/float64(m), sdxx/float64(m)
		for j := range m {
			t := float64(float64(gamma[ch0+j/hw])*float64(dy[off+j])) - mdx
			dx[off+j] = float32(inv * (t - float64(float64(xhat[off+j])*mdxx)))
		}
	}
	return nil
}
