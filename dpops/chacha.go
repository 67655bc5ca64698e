package dpops

import (
	"encoding/binary"
	"math"
	mrand "math/rand/v2"
)

// A chachaStream draws the values of a *rand.ChaCha8 in bulk, bit for bit:
// the same uint64s in the same order, and afterwards the generator is left
// where it would be had they been drawn one by one.
//
// Why: DP-SGD draws one standard normal per model parameter per step
// (431K for the MNIST CNN), and Go's ChaCha8 makes its values four ChaCha8
// blocks at a time with SSE2, about 4.4 ns per uint64 on the reference
// EPYC: 1.9 ms of the step's 3.3 ms of noise (BenchmarkNormals). The
// chacha8rand construction (https://c2sp.org/chacha8rand) computes 16
// ChaCha8 blocks per 32-byte seed: one AVX-512 register per state word
// holds all 16 (block16AVX512, 85 ns per seed on the reference EPYC), two
// AVX2 passes of eight do it in 130 ns (block16AVX2); Go's SSE2 code spends
// about 530 ns on the same 124 values.
//
// How the generator's position is read and written: ChaCha8's
// MarshalBinary encoding, "chacha8:" followed by the number of values used
// from the current seed (big-endian uint64, at most 124) and the seed (four
// little-endian uint64s). That is the format a checkpoint already stores,
// and UnmarshalBinary takes it back. A generator with a Read buffer (a
// "readbuf:" prefix; the noise streams never call Read) is not handled, and
// the caller draws one by one instead.
type chachaStream struct {
	seed [4]uint64
	used int         // values of buf already drawn, ≤ chachaValues
	buf  [128]uint64 // the 16 blocks of seed: 124 values, then the next seed
}

const (
	chachaValues = 124 // values per seed; the last 4 of its 128 are the next seed
	chachaHeader = "chacha8:"
)

// load reads c's position into s and computes the current seed's
// blocks; false if c's encoding is not the plain 48-byte one.
func (s *chachaStream) load(c *mrand.ChaCha8) bool {
	data, err := c.MarshalBinary()
	if err != nil || len(data) != 48 || string(data[:8]) != chachaHeader {
		return false
	}
	used := binary.BigEndian.Uint64(data[8:])
	if used > chachaValues {
		return false
	}
	for i := range s.seed {
		s.seed[i] = binary.LittleEndian.Uint64(data[16+8*i:])
	}
	s.used = int(used)
	block16(&s.seed, &s.buf)
	return true
}

// store moves c to s's position.
func (s *chachaStream) store(c *mrand.ChaCha8) error {
	var data [48]byte
	copy(data[:], chachaHeader)
	binary.BigEndian.PutUint64(data[8:], uint64(s.used))
	for i, v := range s.seed {
		binary.LittleEndian.PutUint64(data[16+8*i:], v)
	}
	return c.UnmarshalBinary(data[:])
}

// next returns the stream's next value.
func (s *chachaStream) next() uint64 {
	if s.used == chachaValues {
		s.reseed()
	}
	v := s.buf[s.used]
	s.used++
	return v
}

// reseed moves on to the next seed: the current seed's last four values.
func (s *chachaStream) reseed() {
	copy(s.seed[:], s.buf[chachaValues:])
	block16(&s.seed, &s.buf)
	s.used = 0
}

// float64 is (*rand.Rand).Float64 on the stream.
func (s *chachaStream) float64() float64 {
	return float64(s.next()<<11>>11) / (1 << 53)
}

// normFrom is (*rand.Rand).NormFloat64 on the stream (Go's math/rand/v2
// normal.go, with its tables in ziggurat_tables.go), its first value u
// already drawn.
func (s *chachaStream) normFrom(u uint64) float64 {
	const rn = 3.442619855899
	for {
		j := int32(u) // possibly negative
		i := u >> 32 & 0x7F
		x := float64(j) * float64(wn[i])
		if absInt32(j) < kn[i] {
			return x // about 97 % of first draws (2.7 % go on, measured)
		}
		if i == 0 { // the base strip's tail
			for {
				x = -math.Log(s.float64()) * (1.0 / rn)
				y := -math.Log(s.float64())
				if y+y >= x*x {
					break
				}
			}
			if j > 0 {
				return rn + x
			}
			return -rn - x
		}
		if fn[i]+float32(s.float64())*(fn[i-1]-fn[i]) < float32(math.Exp(-.5*x*x)) {
			return x
		}
		u = s.next()
	}
}

// absInt32 is |i| as Go's normal.go computes it (MinInt32 gives 1<<31),
// without a branch on i's sign, which is random.
func absInt32(i int32) uint32 {
	m := i >> 31
	return uint32((i ^ m) - m)
}

// normals sets z[k] to successive NormFloat64 draws. The draws accepted at
// once (about 97 %) are taken straight from the seed's buffer; the
// rest go through normFrom.
func (s *chachaStream) normals(z []float64) {
	for len(z) > 0 {
		if s.used == chachaValues {
			s.reseed()
		}
		vals := s.buf[s.used:chachaValues]
		n := min(len(vals), len(z))
		i := acceptedNormals(vals[:n], z[:n])
		s.used += i
		z = z[i:]
		if i < n { // vals[i] was not accepted at once
			s.used++
			z[0] = s.normFrom(vals[i])
			z = z[1:]
		}
	}
}

// acceptedNormals sets z[i] to the normal drawn from vals[i] for the
// leading values that the ziggurat accepts at once, and returns how many
// that is: the first value not accepted needs more draws (normFrom). (An
// AVX-512 version with gathers was no faster on the reference EPYC: about
// a third of this loop's time is the wedge tests' math.Exp, not the loop.)
func acceptedNormals(vals []uint64, z []float64) int {
	z = z[:len(vals)]
	for i, u := range vals {
		j := int32(u)
		t := u >> 32 & 0x7F
		if absInt32(j) >= kn[t] {
			return i
		}
		z[i] = float64(j) * float64(wn[t])
	}
	return len(vals)
}

// block16Go is block16 in Go: the chacha8rand iteration for one seed, 16
// ChaCha8 blocks with counters 0–15, written four blocks at a time with
// the blocks' words interleaved as Go's generator lays them out (word w of
// block 4g+b is uint32 number 64g + 4w + b of buf).
func block16Go(seed *[4]uint64, buf *[128]uint64) {
	var key [8]uint32
	for i, v := range seed {
		key[2*i], key[2*i+1] = uint32(v), uint32(v>>32)
	}
	for blk := range 16 {
		x := [16]uint32{0x61707865, 0x3320646e, 0x79622d32, 0x6b206574}
		copy(x[4:12], key[:])
		x[12] = uint32(blk)
		for range 4 {
			x[0], x[4], x[8], x[12] = quarterRound(x[0], x[4], x[8], x[12])
			x[1], x[5], x[9], x[13] = quarterRound(x[1], x[5], x[9], x[13])
			x[2], x[6], x[10], x[14] = quarterRound(x[2], x[6], x[10], x[14])
			x[3], x[7], x[11], x[15] = quarterRound(x[3], x[7], x[11], x[15])
			x[0], x[5], x[10], x[15] = quarterRound(x[0], x[5], x[10], x[15])
			x[1], x[6], x[11], x[12] = quarterRound(x[1], x[6], x[11], x[12])
			x[2], x[7], x[8], x[13] = quarterRound(x[2], x[7], x[8], x[13])
			x[3], x[4], x[9], x[14] = quarterRound(x[3], x[4], x[9], x[14])
		}
		for w := 4; w < 12; w++ { // only the key words get the input back
			x[w] += key[w-4]
		}
		g, b := blk/4, blk%4
		for w, v := range x {
			pos := 64*g + 4*w + b // uint32 index
			if pos%2 == 0 {
				buf[pos/2] = buf[pos/2]&^0xffffffff | uint64(v)
			} else {
				buf[pos/2] = buf[pos/2]&0xffffffff | uint64(v)<<32
			}
		}
	}
}

func quarterRound(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	a += b
	d ^= a
	d = d<<16 | d>>16
	c += d
	b ^= c
	b = b<<12 | b>>20
	a += b
	d ^= a
	d = d<<8 | d>>24
	c += d
	b ^= c
	b = b<<7 | b>>25
	return a, b, c, d
}
