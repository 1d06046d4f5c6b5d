package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gptg/gptg/internal/testmodel"
)

// writeFiles writes name → content into dir and returns dir.
func writeFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func tinyConfigs() map[string]string {
	base := fmt.Sprintf("[data]\npath = %q\nstride = 4\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\n[train]\nbatch = 2\nmax_steps = 20\n", testmodel.TinyText())
	return map[string]string{
		"configs/a.toml": base,
		"configs/b.toml": "extends = \"a.toml\"\n[model]\nheads = 2\n",
	}
}

// TestExpand: 2 configs × 2 learning rates × 2 seeds in a fixed order,
// names and folders from the varying keys only.
func TestExpand(t *testing.T) {
	files := tinyConfigs()
	files["sweeps/lr.toml"] = `
configs = ["../configs/a.toml", "../configs/b.toml"]
seeds = [1, 7]
[set]
"train.lr" = [3e-4, 1e-3]
"train.max_steps" = 10
`
	dir := writeFiles(t, t.TempDir(), files)
	p, err := Parse(filepath.Join(dir, "sweeps/lr.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Out != "runs/lr" {
		t.Errorf("default out %q", p.Out)
	}
	p.Out = filepath.Join(dir, "out")
	entries, err := p.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%d|%s|%s|%s|%d|%s", e.Index, e.Variant, e.Config, strings.Join(e.Sets, " "), e.Seed, e.Dir))
	}
	want := []string{
		"0|a train.lr=0.0003|../configs/a.toml|train.lr=0.0003 train.max_steps=10|1|runs/a/train.lr=0.0003/seed-1",
		"1|a train.lr=0.0003|../configs/a.toml|train.lr=0.0003 train.max_steps=10|7|runs/a/train.lr=0.0003/seed-7",
		"2|a train.lr=0.001|../configs/a.toml|train.lr=0.001 train.max_steps=10|1|runs/a/train.lr=0.001/seed-1",
		"3|a train.lr=0.001|../configs/a.toml|train.lr=0.001 train.max_steps=10|7|runs/a/train.lr=0.001/seed-7",
		"4|b train.lr=0.0003|../configs/b.toml|train.lr=0.0003 train.max_steps=10|1|runs/b/train.lr=0.0003/seed-1",
		"5|b train.lr=0.0003|../configs/b.toml|train.lr=0.0003 train.max_steps=10|7|runs/b/train.lr=0.0003/seed-7",
		"6|b train.lr=0.001|../configs/b.toml|train.lr=0.001 train.max_steps=10|1|runs/b/train.lr=0.001/seed-1",
		"7|b train.lr=0.001|../configs/b.toml|train.lr=0.001 train.max_steps=10|7|runs/b/train.lr=0.001/seed-7",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Create writes the manifest; Load reads back the same entries; the same
	// sweep again is fine, another one into the folder is refused.
	if _, err := Create(p); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(p.Out)
	if err != nil || len(loaded) != 8 || loaded[7].Dir != entries[7].Dir || loaded[5].Seed != 7 {
		t.Fatalf("Load: %v %+v", err, loaded)
	}
	if spec := loaded[0].Spec(p.Out); spec.Config != filepath.Join(dir, "configs/a.toml") || spec.Dir != filepath.Join(p.Out, "runs/a/train.lr=0.0003/seed-1") {
		t.Errorf("spec %+v", spec)
	}
	if _, err := Create(p); err != nil {
		t.Errorf("the same sweep again: %v", err)
	}
	p.Seeds = []int64{1}
	if _, err := Create(p); err == nil || !strings.Contains(err.Error(), "already holds another sweep") {
		t.Errorf("another sweep into the folder: %v", err)
	}
}

func TestBadSweeps(t *testing.T) {
	for name, c := range map[string]struct{ sweep, msg string }{
		"unknown key":        {"configs = [\"configs/a.toml\"]\nseed = 2\n", "unknown key seed"},
		"no configs":         {"seeds = 2\n", "name at least one config file"},
		"bad seeds":          {"configs = [\"configs/a.toml\"]\nseeds = [1, 1]\n", "seeds must be distinct positive integers"},
		"seed count 0":       {"configs = [\"configs/a.toml\"]\nseeds = 0\n", "seeds:"},
		"duplicate value":    {"configs = [\"configs/a.toml\"]\n[set]\n\"train.lr\" = [1e-3, 1e-3]\n", "the value 0.001 appears twice"},
		"empty value list":   {"configs = [\"configs/a.toml\"]\n[set]\n\"train.lr\" = []\n", "an empty list gives no runs"},
		"impossible value":   {"configs = [\"configs/a.toml\"]\n[set]\n\"model.heads\" = [1, 3]\n", "model.heads: 3 does not divide embedding 8"},
		"unknown set key":    {"configs = [\"configs/a.toml\"]\n[set]\n\"model.haeds\" = [2]\n", "did you mean model.heads?"},
		"same name twice":    {"configs = [\"configs/a.toml\", \"other/a.toml\"]\n", "both give the run name \"a\""},
		"dots as a name":     {"configs = [\"configs/...toml\"]\n", "gives the run name \"..\""},
		"unknown baseline":   {"configs = [\"configs/a.toml\"]\nbaseline = \"z\"\n", "baseline \"z\" is not one of the variants"},
		"missing config":     {"configs = [\"configs/nope.toml\"]\n", "nope.toml"},
		"not TOML":           {"configs = [\n", "sweep file"},
		"a number as config": {"configs = [1]\n", "sweep file"},
	} {
		t.Run(name, func(t *testing.T) {
			files := tinyConfigs()
			files["other/a.toml"] = files["configs/a.toml"]
			files["configs/...toml"] = files["configs/a.toml"]
			files["s.toml"] = c.sweep
			dir := writeFiles(t, t.TempDir(), files)
			p, err := Parse(filepath.Join(dir, "s.toml"))
			if err == nil {
				p.Out = filepath.Join(dir, "out")
				_, err = Create(p)
			}
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got %v, want %q", err, c.msg)
			}
			if _, serr := os.Stat(filepath.Join(dir, "out")); serr == nil {
				t.Error("a refused sweep left a folder")
			}
		})
	}
}

// TestLoadRefusesEscapes: a manifest whose run folder points outside the
// sweep folder (edited by hand, or written by something else) is refused.
func TestLoadRefusesEscapes(t *testing.T) {
	for _, line := range []string{
		`{"index":0,"variant":"a","config":"c.toml","sets":[],"dir":"../elsewhere"}`,
		`{"index":0,"variant":"a","config":"c.toml","sets":[],"dir":"/tmp/x"}`,
		`{"index":1,"variant":"a","config":"c.toml","sets":[],"dir":"runs/a"}`,
		`{"index":0,"variant":"","config":"c.toml","sets":[],"dir":"runs/a"}`,
		`not json`,
	} {
		dir := writeFiles(t, t.TempDir(), map[string]string{ManifestFile: line + "\n"})
		if _, err := Load(dir); err == nil {
			t.Errorf("accepted %s", line)
		}
	}
}

func TestIndexFromEnv(t *testing.T) {
	t.Setenv("SLURM_ARRAY_TASK_ID", "")
	t.Setenv("JOB_COMPLETION_INDEX", "")
	if _, _, ok, err := IndexFromEnv(); ok || err != nil {
		t.Errorf("no variable: ok %v err %v", ok, err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "5")
	if i, from, ok, _ := IndexFromEnv(); !ok || i != 5 || from != "JOB_COMPLETION_INDEX" {
		t.Errorf("k8s: %d %s %v", i, from, ok)
	}
	t.Setenv("SLURM_ARRAY_TASK_ID", "3")
	if i, from, ok, _ := IndexFromEnv(); !ok || i != 3 || from != "SLURM_ARRAY_TASK_ID" {
		t.Errorf("Slurm first: %d %s %v", i, from, ok)
	}
	t.Setenv("SLURM_ARRAY_TASK_ID", "x")
	if _, _, _, err := IndexFromEnv(); err == nil || !strings.Contains(err.Error(), `SLURM_ARRAY_TASK_ID="x"`) {
		t.Errorf("bad value: %v", err)
	}
}

func TestSlurmScript(t *testing.T) {
	b, err := Slurm("/data/sw", 8, SlurmOptions{Parallel: 4, CPUs: 2, Time: "1:00:00", Gptg: "/opt/gptg bin/gptg", Workdir: "/data"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"#!/bin/bash\n", "#SBATCH --array=0-7%4\n", "#SBATCH --cpus-per-task=2\n", "#SBATCH --chdir=/data\n",
		"#SBATCH --output=/data/sw/logs/task-%a.log\n", "#SBATCH --requeue\n", "#SBATCH --time=1:00:00\n",
		`export GOMAXPROCS="${SLURM_CPUS_PER_TASK:-2}"`, "exec '/opt/gptg bin/gptg' sweep run /data/sw\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if b, err := Slurm("/d", 3, SlurmOptions{Gptg: "gptg", Workdir: "/"}); err != nil || !strings.Contains(string(b), "--array=0-2\n") {
		t.Errorf("no limit: %s, %v", b, err)
	}
}

var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// TestK8sJob parses the Job and checks what the API server requires of an
// Indexed Job: batch/v1 Job, a DNS-1123 name short enough for the pods'
// hostnames, completionMode Indexed with completions set, parallelism
// within it, a pod template with restartPolicy Never or OnFailure, a
// container with name and image, every volume mount backed by a volume.
func TestK8sJob(t *testing.T) {
	text, err := K8s(K8sOptions{Image: "ghcr.io/me/gptg:1", Claim: "gptg-work", MountPath: "/work",
		Dir: "runs/A Very Long Sweep Name That Goes On And On", Entries: 8, Parallel: 20, CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    *int   `yaml:"completions"`
			Parallelism    *int   `yaml:"parallelism"`
			BackoffLimit   *int   `yaml:"backoffLimit"`
			Selector       any    `yaml:"selector"`
			Template       struct {
				Spec struct {
					RestartPolicy string `yaml:"restartPolicy"`
					Containers    []struct {
						Name         string   `yaml:"name"`
						Image        string   `yaml:"image"`
						WorkingDir   string   `yaml:"workingDir"`
						Command      []string `yaml:"command"`
						VolumeMounts []struct {
							Name      string `yaml:"name"`
							MountPath string `yaml:"mountPath"`
						} `yaml:"volumeMounts"`
					} `yaml:"containers"`
					Volumes []struct {
						Name string `yaml:"name"`
						PVC  struct {
							ClaimName string `yaml:"claimName"`
						} `yaml:"persistentVolumeClaim"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(text, &job); err != nil {
		t.Fatal(err)
	}
	s := job.Spec
	switch {
	case job.APIVersion != "batch/v1" || job.Kind != "Job":
		t.Errorf("apiVersion %q kind %q", job.APIVersion, job.Kind)
	case !dns1123Label.MatchString(job.Metadata.Name) || len(job.Metadata.Name) > 63-len("-7-xxxxx"):
		t.Errorf("name %q is not a short DNS-1123 label", job.Metadata.Name)
	case s.CompletionMode != "Indexed":
		t.Errorf("completionMode %q", s.CompletionMode)
	case s.Completions == nil || *s.Completions != 8:
		t.Errorf("completions %v, want 8", s.Completions)
	case s.Parallelism == nil || *s.Parallelism < 1 || *s.Parallelism > 8:
		t.Errorf("parallelism %v", s.Parallelism)
	case s.Selector != nil:
		t.Error("a selector is set: the API server generates it")
	case s.Template.Spec.RestartPolicy != "Never" && s.Template.Spec.RestartPolicy != "OnFailure":
		t.Errorf("restartPolicy %q: a Job needs Never or OnFailure", s.Template.Spec.RestartPolicy)
	case len(s.Template.Spec.Containers) != 1:
		t.Fatalf("%d containers", len(s.Template.Spec.Containers))
	}
	c := s.Template.Spec.Containers[0]
	if c.Name == "" || c.Image != "ghcr.io/me/gptg:1" || c.WorkingDir != "/work" ||
		strings.Join(c.Command, " ") != "gptg sweep run runs/A Very Long Sweep Name That Goes On And On" {
		t.Errorf("container %+v", c)
	}
	volumes := map[string]string{}
	for _, v := range s.Template.Spec.Volumes {
		volumes[v.Name] = v.PVC.ClaimName
	}
	if len(c.VolumeMounts) == 0 {
		t.Error("no volume mount")
	}
	for _, m := range c.VolumeMounts {
		if claim, ok := volumes[m.Name]; !ok || claim != "gptg-work" || m.MountPath != "/work" {
			t.Errorf("mount %+v has no volume on claim gptg-work (volumes %v)", m, volumes)
		}
	}
}

// TestEmitSaysWhatTheClusterNeeds: both job files ask for memory and say
// they need a filesystem the nodes share; without an image the Job runs
// the stock Go image and builds gptg from the sources first.
func TestEmitSaysWhatTheClusterNeeds(t *testing.T) {
	sb, err := Slurm("/data/sw", 4, SlurmOptions{Gptg: "gptg", Workdir: "/data", MemoryMiB: 768})
	if err != nil {
		t.Fatal(err)
	}
	s := string(sb)
	for _, want := range []string{"#SBATCH --mem=768M\n", "a filesystem shared by the nodes"} {
		if !strings.Contains(s, want) {
			t.Errorf("sbatch script lacks %q:\n%s", want, s)
		}
	}
	text, err := K8s(K8sOptions{Claim: "gptg-work", MountPath: "/work", Dir: "runs/sw", Entries: 4, CPUs: 1, MemoryMiB: 768})
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Image     string   `yaml:"image"`
						Command   []string `yaml:"command"`
						Resources struct {
							Requests map[string]string `yaml:"requests"`
							Limits   map[string]string `yaml:"limits"`
						} `yaml:"resources"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(text, &job); err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if c.Image != StockImage || !strings.Contains(strings.Join(c.Command, " "), "go build -o /tmp/gptg ./cmd/gptg && exec /tmp/gptg sweep run") ||
		c.Command[len(c.Command)-1] != "runs/sw" {
		t.Errorf("stock image %q, command %q", c.Image, c.Command)
	}
	if c.Resources.Requests["memory"] != "768Mi" || c.Resources.Limits["memory"] != "768Mi" {
		t.Errorf("resources %+v, want 768Mi of memory requested and limited", c.Resources)
	}
	if !strings.Contains(string(text), "ReadWriteMany") {
		t.Errorf("job.yaml does not say the claim must be shared:\n%s", text)
	}
}
