// Command serveload is the load check of gptg serve: one run trains while
// 50 clients use the runs page and 10 follow the run's live curves, all on
// the loopback interface, for a fixed time. It reports the training's
// tokens/s in windows alone and under load, alternating, the requests
// answered and their latency, the server's CPU time and resident memory.
//
//	go build -o /tmp/gptg ./cmd/gptg && go run ./bench/serveload --gptg /tmp/gptg
//
// The clients behave as the page does: each loads the page and its
// scripts once, then asks for /api/runs every --poll (the page's 2 s);
// --poll 0 asks back to back, a stress test beyond what browsers do.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	gptg := flag.String("gptg", "gptg", "the gptg binary")
	window := flag.Duration("window", 10*time.Second, "length of each window")
	pagers := flag.Int("runs-clients", 50, "clients on the runs page")
	followers := flag.Int("live-clients", 10, "clients following the live curves")
	poll := flag.Duration("poll", 2*time.Second, "time between a runs-page client's requests (0: back to back)")
	threads := flag.Int("threads", 1, "the training's --threads")
	pairs := flag.Int("pairs", 3, "loaded windows, each between two alone windows")
	generators := flag.Int("generators", 1, "clients generating from the training run's model in a loop (200 tokens each, as the playground)")
	flag.Parse()
	if err := run(*gptg, *window, *pagers, *followers, *generators, *poll, *threads, max(*pairs, 1)); err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
}

// run starts a training and a server on its run folder, then measures the
// training's tokens/s in windows alone and under the clients' load, and
// prints them. It stays one function because its deferred calls stop the
// processes it starts, in the reverse order of their start, whichever
// step fails: split, each helper would have to hand its process back for
// stopping.
func run(gptg string, window time.Duration, pagers, followers, generators int, poll time.Duration, threads, pairs int) error {
	dir, err := os.MkdirTemp("", "gptg-serveload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The seed's model on tiny-shakespeare, long enough to outlast the
	// three windows; no evaluation on the way, so every step is training,
	// and a checkpoint (with the model file the generators use) every
	// 20,000 steps (about 20 s), alone and loaded alike.
	cfg := filepath.Join(dir, "load.toml")
	os.WriteFile(cfg, []byte(`[data]
path = "builtin:tinyshakespeare"
[train]
epochs = 1000
max_steps = 10000000
eval_every = 0
log_every = 10
checkpoint_every = 20000
out = "runs/load"
`), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	train := exec.CommandContext(ctx, gptg, "train", "load.toml", "--threads", strconv.Itoa(threads))
	train.Dir = dir
	if err := train.Start(); err != nil {
		return err
	}
	defer train.Wait()
	defer train.Process.Signal(os.Interrupt)
	metrics := filepath.Join(dir, "runs", "load", "metrics.jsonl")
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		_, err := os.Stat(filepath.Join(dir, "runs", "load", "model.safetensors"))
		if rows, _ := readRows(metrics); len(rows) >= 3 && (generators == 0 || err == nil) {
			break
		}
		if time.Since(start) > time.Minute {
			return fmt.Errorf("the training wrote no metrics in a minute")
		}
	}
	serve := exec.CommandContext(ctx, gptg, "serve", "runs", "--addr", "127.0.0.1:0")
	serve.Dir = dir
	out, _ := serve.StdoutPipe()
	if err := serve.Start(); err != nil {
		return err
	}
	defer serve.Wait()
	defer serve.Process.Signal(os.Interrupt)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("gptg serve printed no address: %v", err)
	}
	_, base, _ := strings.Cut(strings.TrimSpace(line), " on ")
	base, _, _ = strings.Cut(base, " ")
	go io.Copy(io.Discard, out)

	fmt.Printf("load check: %d runs-page clients (poll %v), %d live-curve clients, %d generating in a loop, %d loaded windows of %v between alone ones; training --threads %d\n",
		pagers, poll, followers, generators, pairs, window, threads)
	rate := func(what string) (float64, error) {
		a, err := readRows(metrics)
		if err != nil {
			return 0, err
		}
		time.Sleep(window)
		b, err := readRows(metrics)
		if err != nil {
			return 0, err
		}
		r0, r1 := a[len(a)-1], b[len(b)-1]
		tps := (r1.TokensPerSec*r1.Elapsed - r0.TokensPerSec*r0.Elapsed) / (r1.Elapsed - r0.Elapsed)
		fmt.Printf("  %-22s steps %d→%d, %.0f tokens/s\n", what, r0.Step, r1.Step, tps)
		return tps, nil
	}
	// The load: started and stopped for each loaded window, its counts
	// summed over them.
	var lat latencies
	var failures, rowsSeen, generated, generations atomic.Int64
	var peakRSS atomic.Int64
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: pagers + followers}}
	startLoad := func() func() {
		lctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for i := 0; i < pagers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, p := range []string{"/", "/assets/app.js", "/assets/uplot/uPlot.iife.min.js", "/assets/style.css"} {
					get(lctx, client, base+p, &lat, &failures)
				}
				for lctx.Err() == nil {
					get(lctx, client, base+"/api/runs", &lat, &failures)
					if poll > 0 {
						select {
						case <-lctx.Done():
						case <-time.After(poll):
						}
					}
				}
			}()
		}
		for i := 0; i < followers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(lctx, "GET", base+"/api/live?id=runs/load", nil)
				resp, err := client.Do(req)
				if err != nil {
					if lctx.Err() == nil {
						failures.Add(1)
					}
					return
				}
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				sc.Buffer(make([]byte, 1<<20), 8<<20)
				for sc.Scan() {
					if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
						var c struct{ Step []int }
						json.Unmarshal([]byte(d), &c)
						rowsSeen.Add(int64(len(c.Step)))
					}
				}
			}()
		}
		for i := 0; i < generators; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seed := 0; lctx.Err() == nil; seed++ {
					body := fmt.Sprintf(`{"id":"runs/load","prompt":"ROMEO:","tokens":200,"seed":%d}`, seed)
					req, _ := http.NewRequestWithContext(lctx, "POST", base+"/api/generate", strings.NewReader(body))
					resp, err := client.Do(req)
					if err != nil {
						if lctx.Err() == nil {
							failures.Add(1)
						}
						return
					}
					sc := bufio.NewScanner(resp.Body)
					for sc.Scan() {
						if sc.Text() == "event: token" {
							generated.Add(1)
						}
						if sc.Text() == "event: done" {
							generations.Add(1)
						}
					}
					resp.Body.Close()
					if resp.StatusCode != 200 && lctx.Err() == nil {
						failures.Add(1)
						time.Sleep(time.Second)
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lctx.Err() == nil {
				if kb := rssKB(serve.Process.Pid, "VmRSS:"); kb > peakRSS.Load() {
					peakRSS.Store(kb)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		return func() { stop(); wg.Wait() }
	}
	// Alone and loaded windows alternate, pairs times, and end alone: each
	// loaded window is compared with the mean of the alone windows on its
	// two sides, so that a drift of the machine's own load cancels.
	alone, err := rate("alone (server idle):")
	if err != nil {
		return err
	}
	var ratios []float64
	serverCPU := 0.0
	for i := 0; i < pairs; i++ {
		stop := startLoad()
		cpu0 := cpuSeconds(serve.Process.Pid)
		loaded, err := rate("under load:")
		serverCPU += cpuSeconds(serve.Process.Pid) - cpu0
		stop()
		if err != nil {
			return err
		}
		next, err := rate("alone again:")
		if err != nil {
			return err
		}
		ratios = append(ratios, loaded/((alone+next)/2))
		alone = next
	}
	sort.Float64s(ratios)
	loadedSecs := window.Seconds() * float64(pairs)
	p50, p99, n := lat.quantiles()
	fmt.Printf("  training tokens/s under load, as a share of the alone windows beside it: median %.1f %% (each: %s)\n",
		100*ratios[len(ratios)/2], percents(ratios))
	fmt.Printf("  requests answered: %d (%.0f/s), failures %d; latency p50 %.1f ms, p99 %.1f ms\n",
		n, float64(n)/loadedSecs, failures.Load(), p50, p99)
	fmt.Printf("  live clients received %d rows in all\n", rowsSeen.Load())
	fmt.Printf("  generators: %d generations, %d tokens (%.0f tokens/s)\n", generations.Load(), generated.Load(), float64(generated.Load())/loadedSecs)
	// A figure the machine's other load does not change much: what the
	// server itself took, which bounds what it can take from the training.
	fmt.Printf("  server CPU while loaded: %.2f s in %.0f s, %.1f %% of one core\n",
		serverCPU, loadedSecs, 100*serverCPU/loadedSecs)
	fmt.Printf("  server RSS: %.1f MiB peak while loaded, %.1f MiB high-water mark\n",
		float64(peakRSS.Load())/1024, float64(rssKB(serve.Process.Pid, "VmHWM:"))/1024)
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("  machine load average (1, 5, 15 min): %s\n", strings.Join(strings.Fields(string(load))[:3], " "))
	}
	return nil
}

func percents(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%.0f %%", 100*x))
	}
	return strings.Join(parts, ", ")
}

type metricsRow struct {
	Step         int     `json:"step"`
	TokensPerSec float64 `json:"tokens_per_s"`
	Elapsed      float64 `json:"elapsed_s"`
}

func readRows(path string) ([]metricsRow, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []metricsRow
	for _, line := range strings.Split(string(b), "\n") {
		var r metricsRow
		if json.Unmarshal([]byte(line), &r) == nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s has no rows", path)
	}
	return rows, nil
}

func get(ctx context.Context, c *http.Client, url string, lat *latencies, failures *atomic.Int64) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	t := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			failures.Add(1)
		}
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		failures.Add(1)
		return
	}
	lat.add(time.Since(t))
}

type latencies struct {
	mu sync.Mutex
	ms []float64
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.ms = append(l.ms, float64(d.Microseconds())/1000)
	l.mu.Unlock()
}

func (l *latencies) quantiles() (p50, p99 float64, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ms) == 0 {
		return 0, 0, 0
	}
	sort.Float64s(l.ms)
	return l.ms[len(l.ms)/2], l.ms[len(l.ms)*99/100], len(l.ms)
}

// rssKB reads a field of /proc/PID/status, in KiB.
func rssKB(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// cpuSeconds is the user and system CPU time a process has used.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // clock ticks (USER_HZ, 100 on Linux)
}
