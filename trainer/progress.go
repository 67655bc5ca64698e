package trainer

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"fairdp/backend"
)

// progress draws a one-line bar with throughput and ε spent when the output
// is a terminal, and prints one plain line per epoch otherwise (logs, CI).
type progress struct {
	w        io.Writer
	quiet    bool
	tty      bool
	total    int
	steps    int
	start    time.Time
	lastDraw time.Time
}

func newProgress(w io.Writer, quiet bool, totalSteps int) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	p := &progress{w: w, quiet: quiet || w == nil, tty: tty, total: totalSteps, start: time.Now()}
	if !p.quiet { // first line: the matrix-product path, so a user sees why a machine is slow
		fmt.Fprintln(w, "matrix products:", backend.Describe())
	}
	return p
}

func (p *progress) step(samples int, epsilon func() *float64) {
	p.steps++
	if p.quiet || !p.tty || time.Since(p.lastDraw) < 100*time.Millisecond {
		return
	}
	p.lastDraw = time.Now()
	const width = 30
	filled := width * p.steps / max(1, p.total)
	e := "∞"
	if eps := epsilon(); eps != nil {
		e = fmt.Sprintf("%.3f", *eps)
	}
	el := time.Since(p.start).Seconds()
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d steps  %.0f samples/s  ε=%s ", strings.Repeat("#", filled),
		strings.Repeat(".", width-filled), p.steps, p.total, float64(samples)/max(1e-9, el), e)
}

func (p *progress) epoch(l EpochLog) {
	if p.quiet {
		return
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	e := "∞"
	if l.Epsilon != nil {
		e = fmt.Sprintf("%.4f", *l.Epsilon)
	}
	loss := ""
	if l.TrainLoss != nil {
		loss = fmt.Sprintf("train loss %.4f  ", *l.TrainLoss)
	}
	fmt.Fprintf(p.w, "epoch %d: %stest error %.4f  DP %.4f  EO %.4f  ε %s  %.0f samples/s\n",
		l.Epoch, loss, l.TestError, l.TestDP, l.TestEO, e, l.SamplesPerS)
	p.start = time.Now()
}

func (p *progress) done() {}
