package trainer

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fairdp/fairdp/backend"
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
	now      func() time.Time
}

// isTerminal and progressClock are the bar's view of its output and of
// time, variables so that a test can draw the bar into a buffer on a clock
// of its own.
var (
	isTerminal = func(w io.Writer) bool {
		f, ok := w.(*os.File)
		if !ok {
			return false
		}
		st, err := f.Stat()
		return err == nil && st.Mode()&os.ModeCharDevice != 0
	}
	progressClock = time.Now
)

func newProgress(w io.Writer, quiet bool, totalSteps int) *progress {
	p := &progress{w: w, quiet: quiet || w == nil, total: totalSteps, now: progressClock}
	p.tty = !p.quiet && isTerminal(w)
	p.start = p.now()
	if !p.quiet { // first line: the matrix-product path, so a user sees why a machine is slow
		fmt.Fprintln(w, "matrix products:", backend.Describe())
	}
	return p
}

// step counts one step; samples is the epoch's samples so far, which a
// private run gives from the expected batch size (a Poisson batch's size
// is private: the rate of exact sizes would publish them).
func (p *progress) step(samples int, epsilon func() *float64) {
	p.steps++
	if p.quiet || !p.tty || p.now().Sub(p.lastDraw) < 100*time.Millisecond {
		return
	}
	p.lastDraw = p.now()
	const width = 30
	filled := width * p.steps / max(1, p.total)
	e := "∞"
	if eps := epsilon(); eps != nil {
		e = fmt.Sprintf("%.3f", *eps)
	}
	el := p.now().Sub(p.start).Seconds()
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
	if l.TestMSPE != nil { // a regression: no error rate or violations
		fmt.Fprintf(p.w, "epoch %d: %stest MSPE %.4f  ε %s  %.0f samples/s\n", l.Epoch, loss, *l.TestMSPE, e, l.SamplesPerS)
	} else {
		fmt.Fprintf(p.w, "epoch %d: %stest error %.4f  DP %.4f  EO %.4f  ε %s  %.0f samples/s\n",
			l.Epoch, loss, l.TestError, l.TestDP, l.TestEO, e, l.SamplesPerS)
	}
	p.start = p.now()
}

func (p *progress) done() {}
