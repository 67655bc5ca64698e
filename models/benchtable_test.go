package models

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairdp/fairdp/backend"
	"github.com/fairdp/fairdp/nn"
)

// TestBenchTable prints the throughput table `make bench` shows: for the
// benchmark models and batches above, one plain, one DP-SGD and one
// DP-FERMI step (the stepKinds), samples/s, the step's matrix-product work
// in GFLOP (counted by nn.Gemm), the GFLOP/s that makes, its share of the
// SGEMM peak measured in the same run (sgemmPeak, on the same float32 GEMM
// path), the private/plain time ratio, the DP-FERMI/DP-SGD ratio, the CPU
// seconds per step and the peak RSS. Each row runs in its own process
// (this test binary re-executed) so its peak RSS is its own. It is a
// benchmark, not a check: it runs only with FAIRDP_BENCH_TABLE=1, e.g.
//
//	FAIRDP_BENCH_TABLE=1 go test -run '^TestBenchTable$' -v -timeout 0 ./models
//
// The times (samples/s, GFLOP/s, % of peak and both ratios) come from one
// process per model that alternates the three kinds of step, each on its
// own copy of the model, rotating which goes first, for at least 3 rounds
// and 2 s (FAIRDP_BENCH_STEPS sets the rounds instead), and takes each
// kind's median and, for the ratios, the median of the rounds' ratios
// (the steps of one round ran within milliseconds of each other, so the
// drift divides out): timed in separate processes one after the other, the
// logistic rows' ratios moved by ±30 % between runs on a virtual machine
// whose speed drifts over seconds. Each row's CPU seconds and peak RSS come
// from a process of its own (three VGG models in one process would triple
// the RSS). FAIRDP_GEMM=own|blas picks the float32 GEMM path.
func TestBenchTable(t *testing.T) {
	if name := os.Getenv("FAIRDP_BENCH_CASE"); name != "" {
		benchCase(t, name)
		return
	}
	if os.Getenv("FAIRDP_BENCH_TABLE") != "1" {
		t.Skip("set FAIRDP_BENCH_TABLE=1 to run the benchmark table")
	}
	// The peak is measured before each model and at the end, and the
	// largest reading is the one used: on a virtual machine it moved from
	// 168 to 211 GFLOP/s between runs minutes apart, and one low reading
	// would flatter every row's share of it.
	peaks := []float64{sgemmPeak()}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("fairdp benchmark table: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Printf("float32 GEMM path: %s\n", backend.Describe())
	fmt.Printf("load average before: %s\n", strings.TrimSpace(string(load)))
	var rows, ofMedians []string
	var gflops []float64
	for k, m := range benchModels {
		if k > 0 {
			peaks = append(peaks, sgemmPeak())
		}
		secs, err := runInterleaved(m.name)
		if err != nil {
			t.Fatal(err)
		}
		ofMedians = append(ofMedians, fmt.Sprintf("%s %.2f× / %.2f× / %.2f×", m.name,
			secs[stepDPSGD]/secs[stepPlain], secs[stepDPFERMI]/secs[stepPlain], secs[stepDPFERMI]/secs[stepDPSGD]))
		for _, kind := range stepKinds {
			r, err := runCase(m.name + "/" + kind)
			if err != nil {
				t.Fatal(err)
			}
			sec := secs[kind]
			ratio, fermi := "—", "—"
			if kind != stepPlain {
				ratio = fmt.Sprintf("%.2f×", secs[kind+"/"+stepPlain])
			}
			if kind == stepDPFERMI {
				fermi = fmt.Sprintf("%.2f×", secs[stepDPFERMI+"/"+stepDPSGD])
			}
			g := r.Flops / sec / 1e9
			gflops = append(gflops, g)
			// %%s is filled with the share of the peak once every peak is in.
			rows = append(rows, fmt.Sprintf("| %s (%d) | %s | %s | %.3g | %.1f | %%s | %s | %s | %.3g | %d MB |",
				m.name, m.batch, kind, rate(float64(m.batch)/sec), r.Flops/1e9, g, ratio, fermi, r.CPUSeconds, r.MaxRSSKB/1024))
		}
	}
	peaks = append(peaks, sgemmPeak())
	peak := slices.Max(peaks)
	fmt.Printf("SGEMM peak (1024³ on %d cores): %.1f GFLOP/s, the largest of %d readings (%.1f–%.1f) taken before each model and at the end\n",
		runtime.NumCPU(), peak, len(peaks), slices.Min(peaks), peak)
	fmt.Println("| model (batch) | step | samples/s | GFLOP/step | GFLOP/s | % of peak | DP/plain | DP-FERMI/DP-SGD | CPU-s/step | peak RSS |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for i, row := range rows {
		fmt.Printf(row+"\n", fmt.Sprintf("%.0f %%", 100*gflops[i]/peak))
	}
	fmt.Printf("The ratios are medians of the rounds' ratios; the ratios of the median times (the samples/s columns), DP-SGD/plain / DP-FERMI/plain / DP-FERMI/DP-SGD: %s\n",
		strings.Join(ofMedians, "; "))
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Printf("load average after: %s\n", strings.TrimSpace(string(load)))
}

var benchModels = []struct {
	name  string
	spec  Spec
	batch int
}{
	{"logistic", benchLogistic, 1024},
	{"mnist-cnn", benchMNIST, 256},
	{"vgg", benchVGG, 64},
}

// caseResult is what a row's process reports: the mean CPU time of a step
// (all threads; steadier than wall-clock on a shared machine), the product
// work of one step and the process's peak RSS. Its step times are the
// interleaved process's (benchInterleaved).
type caseResult struct {
	CPUSeconds float64 `json:"cpu_seconds"`
	Flops      float64 `json:"flops"`
	MaxRSSKB   int64   `json:"max_rss_kb"`
}

const caseMarker = "BENCHCASE "

func runCase(name string) (caseResult, error) {
	var r caseResult
	return r, runChild(name, &r)
}

// runInterleaved returns the median step time of each kind of step of the
// model and the medians of the rounds' ratios, measured in one process that
// alternates them (benchInterleaved).
func runInterleaved(model string) (map[string]float64, error) {
	var secs map[string]float64
	return secs, runChild(model, &secs)
}

// runChild runs this test binary again with FAIRDP_BENCH_CASE=name and
// decodes the JSON it prints after caseMarker into result.
func runChild(name string, result any) error {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestBenchTable$", "-test.v")
	cmd.Env = append(os.Environ(), "FAIRDP_BENCH_CASE="+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", name, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), caseMarker); ok {
			return json.Unmarshal([]byte(rest), result)
		}
	}
	return fmt.Errorf("%s: no result in\n%s", name, out)
}

// benchCase runs one row ("model/kind") in this process, a warm-up step
// and then timed steps as benchStep does, or ("model") the interleaved
// timing of all its kinds (benchInterleaved).
func benchCase(t *testing.T, name string) {
	model, kind, one := strings.Cut(name, "/")
	i := slices.IndexFunc(benchModels, func(m struct {
		name  string
		spec  Spec
		batch int
	}) bool {
		return m.name == model
	})
	if !one && i >= 0 {
		benchInterleaved(t, i)
		return
	}
	if i < 0 || !slices.Contains(stepKinds, kind) {
		t.Fatalf("unknown case %q", name)
	}
	// This process gives only the row's CPU seconds (its peak RSS is why it
	// runs alone); the table's times are interleaved.
	steps, minTime := 3, time.Second
	if v, err := strconv.Atoi(os.Getenv("FAIRDP_BENCH_STEPS")); err == nil && v > 0 {
		steps, minTime = v, 0
	}
	backend.SetThreads(1) // nn parallelises over the batch itself, as in benchStep
	s := newStepper(t, benchModels[i].spec, benchModels[i].batch)
	run := s.stepFunc(t, kind)
	f0 := nn.GemmFlops()
	run() // sizes every layer's buffers
	flops := nn.GemmFlops() - f0
	cpu := cpuSeconds()
	begin := time.Now()
	done := 0
	for done < steps || time.Since(begin) < minTime {
		run()
		done++
	}
	cpu = (cpuSeconds() - cpu) / float64(done)
	out, _ := json.Marshal(caseResult{CPUSeconds: cpu, Flops: float64(flops), MaxRSSKB: maxRSSKB()})
	fmt.Println(caseMarker + string(out))
}

// benchInterleaved times every kind of step of benchModels[i] in this
// process: one stepper (model copy) per kind, a warm-up step each, then
// rounds of one step of each kind, the first of a round rotating, for at
// least 3 rounds and 2 s (FAIRDP_BENCH_STEPS rounds if set). It prints each
// kind's median step time, and the median over rounds of the ratios
// "dp-sgd/plain", "dp-fermi/plain" and "dp-fermi/dp-sgd". Alternating puts
// the machine's drifts on every kind alike, so the ratios between kinds are
// steadier than the times.
func benchInterleaved(t *testing.T, i int) {
	rounds, minTime := 3, 2*time.Second
	if v, err := strconv.Atoi(os.Getenv("FAIRDP_BENCH_STEPS")); err == nil && v > 0 {
		rounds, minTime = v, 0
	}
	backend.SetThreads(1)
	runs := make([]func(), len(stepKinds))
	for k, kind := range stepKinds {
		runs[k] = newStepper(t, benchModels[i].spec, benchModels[i].batch).stepFunc(t, kind)
		runs[k]()
	}
	times := make([][]float64, len(stepKinds))
	begin := time.Now()
	for r := 0; r < rounds || time.Since(begin) < minTime; r++ {
		for j := range runs {
			k := (j + r) % len(runs)
			start := time.Now()
			runs[k]()
			times[k] = append(times[k], time.Since(start).Seconds())
		}
	}
	medians := map[string]float64{}
	// The ratios are medians of each round's ratio: the steps of a round
	// ran within milliseconds of each other, so the machine's drift over
	// the seconds of the run divides out of each one.
	for _, r := range [][2]string{{stepDPSGD, stepPlain}, {stepDPFERMI, stepPlain}, {stepDPFERMI, stepDPSGD}} {
		num, den := slices.Index(stepKinds, r[0]), slices.Index(stepKinds, r[1])
		ratios := make([]float64, len(times[num]))
		for i := range ratios {
			ratios[i] = times[num][i] / times[den][i]
		}
		medians[r[0]+"/"+r[1]] = median(ratios)
	}
	for k, kind := range stepKinds {
		medians[kind] = median(times[k])
	}
	out, _ := json.Marshal(medians)
	fmt.Println(caseMarker + string(out))
}

// median returns the middle value of v (the upper one of an even count),
// sorting v.
func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// sgemmPeak is the best of five 1024³ float32 products on the path nn.Gemm
// uses, on all cores, in GFLOP/s.
func sgemmPeak() float64 {
	const n = 1024
	cores := runtime.NumCPU()
	product := func(threads, copies int) float64 {
		backend.SetThreads(threads)
		defer backend.SetThreads(1)
		bufs := make([][3][]float32, copies)
		for i := range bufs {
			a, b := make([]float32, n*n), make([]float32, n*n)
			for j := range a {
				a[j], b[j] = float32(j%7)-3, float32(j%5)-2
			}
			bufs[i] = [3][]float32{a, b, make([]float32, n*n)}
		}
		best := 0.0
		for range 5 {
			var wg sync.WaitGroup
			start := time.Now()
			for _, buf := range bufs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					nn.Gemm(false, false, n, n, n, 1, buf[0], n, buf[1], n, 0, buf[2], n)
				}()
			}
			wg.Wait()
			best = max(best, float64(copies)*2*n*n*n/time.Since(start).Seconds()/1e9)
		}
		return best
	}
	// The layers run one single-threaded product per worker, one worker a
	// core, so the peak they can reach is that of one product per core at
	// once; one product split over every core is the other reading. The
	// larger of the two is the peak (the threaded one alone read low here:
	// the VGG step came out at 121 % of it).
	return max(product(cores, 1), product(1, cores))
}

// rate formats samples/s: "3.52 M", "2520", "984", "4.95".
func rate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.3g M", v/1e6)
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
