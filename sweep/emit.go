package sweep

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gptg/gptg/internal/quote"
)

// SlurmOptions shape the sbatch script.
type SlurmOptions struct {
	Parallel  int    // array tasks running at once (the %K of --array); 0 = no limit
	CPUs      int    // --cpus-per-task
	Time      string // --time, "" = the partition's default
	Partition string // --partition, "" = the default
	Gptg      string // the gptg binary the tasks run (an absolute path, or a name on the PATH)
	Workdir   string // the folder tasks run in (relative data paths start there); absolute
	MemoryMiB int    // memory of each task (of each rank with Ranks); 0 = the partition's default
	// Ranks, above 1, makes each array task a job of Ranks tasks (one MPI
	// rank each, CPUs cores each) whose entry trains with mpirun -np Ranks
	// gptg train --distributed: the gptg binary must be built with -tags mpi.
	Ranks int
}

// Slurm writes an sbatch script that runs the sweep in dir (absolute) as
// a job array, one task per entry: task I runs `gptg sweep run DIR`,
// which reads SLURM_ARRAY_TASK_ID. Tasks are requeueable, and a requeued
// task appends to its own log, logs/task-I.log.
//
// Every value that reaches the script is checked or quoted: #SBATCH lines
// are read by sbatch, not by a shell, and cannot quote, so the folders they
// name must be plain paths and --time and --partition must have Slurm's
// forms; the command lines quote for bash. A newline in any of them would
// otherwise start a line of its own, which bash runs.
func Slurm(dir string, entries int, o SlurmOptions) ([]byte, error) {
	if o.CPUs < 1 {
		o.CPUs = 1
	}
	for _, v := range []struct{ what, value string }{{"the sweep folder", dir}, {"the working folder", o.Workdir}} {
		if !sbatchPath(v.value) {
			return nil, &Error{fmt.Sprintf("%s %s holds a space, a quote or a control character, which an #SBATCH line cannot hold: move it, or run from a plain path", v.what, quote.Value(v.value))}
		}
	}
	if o.Time != "" && !slurmTime.MatchString(o.Time) {
		return nil, &Error{fmt.Sprintf("--time %s is not a Slurm time limit (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED)", quote.Value(o.Time))}
	}
	if o.Partition != "" && !slurmPartition.MatchString(o.Partition) {
		return nil, &Error{fmt.Sprintf("--partition %s is not a partition name (letters, digits, _ . - and commas between names)", quote.Value(o.Partition))}
	}
	if !quote.Printable(o.Gptg) {
		return nil, &Error{fmt.Sprintf("the gptg binary's path %s holds a control character", quote.Value(o.Gptg))}
	}
	array := fmt.Sprintf("0-%d", entries-1)
	if o.Parallel > 0 && o.Parallel < entries {
		array += fmt.Sprintf("%%%d", o.Parallel)
	}
	collect := "gptg sweep collect " + shellQuote(dir)
	var b bytes.Buffer
	fmt.Fprintf(&b, "#!/bin/bash\n")
	fmt.Fprintf(&b, "# gptg sweep %s: %d runs, one array task each (written by gptg sweep emit slurm).\n", shellQuote(dir), entries)
	fmt.Fprintf(&b, "# Submit: sbatch %s\n", shellQuote(filepath.Join(dir, "sweep.sbatch")))
	fmt.Fprintf(&b, "# Then:   %s   (or: sbatch --dependency=afterany:JOBID --wrap %s)\n", collect, shellQuote(collect))
	fmt.Fprintf(&b, "# Every node must see %s, the sweep folder and the gptg binary at these paths:\n", o.Workdir)
	fmt.Fprintf(&b, "# a filesystem shared by the nodes (NFS, Lustre, ...), as a cluster's home or project space is.\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=gptg-%s\n", jobName(filepath.Base(dir)))
	fmt.Fprintf(&b, "#SBATCH --array=%s\n", array)
	fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", o.CPUs)
	fmt.Fprintf(&b, "#SBATCH --ntasks=%d\n", max(1, o.Ranks))
	fmt.Fprintf(&b, "#SBATCH --chdir=%s\n", o.Workdir)
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", filepath.Join(dir, "logs", "task-%a.log"))
	fmt.Fprintf(&b, "#SBATCH --open-mode=append\n")
	fmt.Fprintf(&b, "#SBATCH --requeue\n")
	if o.Time != "" {
		fmt.Fprintf(&b, "#SBATCH --time=%s\n", o.Time)
	}
	if o.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", o.Partition)
	}
	switch {
	case o.MemoryMiB > 0 && o.Ranks > 1:
		// --mem is per node, and Slurm may put several ranks on one: ask
		// per CPU, each rank's memory over its CPUs.
		fmt.Fprintf(&b, "#SBATCH --mem-per-cpu=%dM\n", (o.MemoryMiB+o.CPUs-1)/o.CPUs)
	case o.MemoryMiB > 0:
		fmt.Fprintf(&b, "#SBATCH --mem=%dM\n", o.MemoryMiB)
	}
	ranks := ""
	if o.Ranks > 1 {
		ranks = fmt.Sprintf(" --ranks %d", o.Ranks)
		fmt.Fprintf(&b, "# Each entry trains on %d MPI ranks, one per task: mpirun, started by gptg sweep run,\n", o.Ranks)
		fmt.Fprintf(&b, "# finds them in the job's allocation. The gptg binary must be built with -tags mpi.\n")
	}
	fmt.Fprintf(&b, `
# One gptg process per task, using the CPUs Slurm gave it.
export GOMAXPROCS="${SLURM_CPUS_PER_TASK:-%d}"
echo "task ${SLURM_ARRAY_TASK_ID} on $(hostname), restart ${SLURM_RESTART_COUNT:-0}, $(date -u +%%FT%%TZ)"
# exec: Slurm's SIGTERM (scancel, preemption, requeue) reaches gptg, which
# saves a checkpoint; the requeued task resumes from it.
exec %s sweep run %s%s
`, o.CPUs, shellQuote(o.Gptg), shellQuote(dir), ranks)
	return b.Bytes(), nil
}

var (
	// slurmTime is --time's forms (sbatch(1)).
	slurmTime = regexp.MustCompile(`^([0-9]+|[0-9]+:[0-9]{1,2}|[0-9]+:[0-9]{1,2}:[0-9]{1,2}|[0-9]+-[0-9]+|[0-9]+-[0-9]+:[0-9]{1,2}|[0-9]+-[0-9]+:[0-9]{1,2}:[0-9]{1,2}|UNLIMITED|INFINITE|unlimited|infinite)$`)
	// slurmPartition is one partition name or a comma-separated list.
	slurmPartition = regexp.MustCompile(`^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$`)
)

// sbatchPath reports whether an #SBATCH line can hold path as it is: no
// white space, quotes, backslashes or control characters.
func sbatchPath(path string) bool {
	return quote.Printable(path) && !strings.ContainsAny(path, " \t\"'\\`$")
}

// shellQuote quotes s for bash when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=,:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var (
	notDNS  = regexp.MustCompile(`[^a-z0-9-]+`)
	k8sName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// jobName makes a Kubernetes- and Slurm-friendly name: lower case letters,
// digits and '-', starting and ending with a letter or digit.
func jobName(s string) string {
	s = strings.Trim(notDNS.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if s == "" {
		s = "sweep"
	}
	return s
}

// K8sOptions shape the Kubernetes Job.
type K8sOptions struct {
	Name      string // the Job's name; "" = gptg-sweep-<folder name>
	Image     string // a container image with gptg on its PATH; "" = StockImage, which builds gptg
	Claim     string // the PersistentVolumeClaim holding the project folder
	MountPath string // where the claim is mounted and the tasks run
	Dir       string // the sweep folder, relative to the mount
	Entries   int
	Parallel  int // pods at once; 0 = all
	CPUs      int
	MemoryMiB int // requested and limit per pod
}

// StockImage is the image a Job runs when no image with gptg is given: the
// Go toolchain, which builds gptg from the project folder on the volume
// before running it (with its build and module caches on the volume, so
// only the first pod compiles and downloads). Docker Hub's official image;
// the pods need to reach proxy.golang.org unless the caches are filled.
const StockImage = "golang:1.26-bookworm"

// K8s writes a batch/v1 Indexed Job that runs the sweep: completion index
// I (JOB_COMPLETION_INDEX) runs entry I, in the project folder on the
// volume, so the corpus and configs are found by the paths the manifest
// and configs give.
func K8s(o K8sOptions) ([]byte, error) {
	if err := settleK8s(&o); err != nil {
		return nil, err
	}
	job := k8sJob(o)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# gptg sweep %s: %d runs as a Kubernetes Indexed Job (written by gptg sweep emit k8s).\n", o.Dir, o.Entries)
	fmt.Fprintf(&b, "# The claim %s must hold the project folder (sources, configs, data, %s) and, with parallel\n", o.Claim, o.Dir)
	fmt.Fprintf(&b, "# pods on several nodes, be a filesystem they share (access mode ReadWriteMany: NFS, CephFS, EFS, ...).\n")
	if o.Image == "" {
		fmt.Fprintf(&b, "# The image is the stock Go toolchain (%s): each pod builds gptg from the sources on the claim\n", StockImage)
		fmt.Fprintf(&b, "# (caches in .cache/ there; the first pod downloads the modules). --image IMAGE runs an image with gptg instead.\n")
	}
	fmt.Fprintf(&b, "# Apply with kubectl apply -f.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(job); err != nil {
		return nil, fmt.Errorf("job YAML: %w", err)
	}
	return b.Bytes(), enc.Close()
}

// settleK8s refuses options that would make a broken Job (a control
// character in a comment line, a claim that is no Kubernetes name), and
// fills in the defaults: one CPU, every entry at once, a name from the
// sweep folder's, short enough for the pods' labels.
func settleK8s(o *K8sOptions) error {
	// The YAML encoder quotes values; the comment lines above it do not,
	// and a newline there would start a line of YAML.
	for _, v := range []struct{ what, value string }{{"the sweep folder", o.Dir}, {"--image", o.Image}, {"--mount", o.MountPath}} {
		if !quote.Printable(v.value) {
			return &Error{fmt.Sprintf("%s %s holds a control character", v.what, quote.Value(v.value))}
		}
	}
	if !k8sName.MatchString(o.Claim) || len(o.Claim) > 253 {
		return &Error{fmt.Sprintf("--claim %s is not a Kubernetes name (lower-case letters, digits, - and ., starting and ending with a letter or digit)", quote.Value(o.Claim))}
	}
	if o.CPUs < 1 {
		o.CPUs = 1
	}
	if o.Parallel <= 0 || o.Parallel > o.Entries {
		o.Parallel = o.Entries
	}
	if o.Name == "" {
		o.Name = "gptg-sweep-" + jobName(filepath.Base(o.Dir))
	}
	// An Indexed Job's pods are named <job>-<index>-<suffix>: keep the
	// name short enough for a 63-character label.
	if len(o.Name) > 40 {
		o.Name = strings.TrimRight(o.Name[:40], "-")
	}
	return nil
}

// k8sJob is the Indexed Job of o's sweep, as YAML's encoder takes it.
func k8sJob(o K8sOptions) map[string]any {
	cpu := strconv.Itoa(o.CPUs)
	mem := strconv.Itoa(max(o.MemoryMiB, 256)) + "Mi"
	command := []any{"gptg", "sweep", "run", o.Dir}
	env := []any{map[string]any{"name": "GOMAXPROCS", "value": cpu}}
	image := o.Image
	if image == "" {
		image = StockImage
		command = []any{"sh", "-c", "go build -o /tmp/gptg ./cmd/gptg && exec /tmp/gptg sweep run \"$0\"", o.Dir}
		env = append(env,
			map[string]any{"name": "GOCACHE", "value": o.MountPath + "/.cache/go-build"},
			map[string]any{"name": "GOMODCACHE", "value": o.MountPath + "/.cache/go-mod"})
	}
	return map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata": map[string]any{
			"name":   o.Name,
			"labels": map[string]any{"app.kubernetes.io/name": "gptg", "app.kubernetes.io/component": "sweep"},
		},
		"spec": map[string]any{
			"completionMode": "Indexed",
			"completions":    o.Entries,
			"parallelism":    o.Parallel,
			// A pod that fails (not one that is preempted) is retried;
			// the run resumes from its checkpoint.
			"backoffLimit": 3 * o.Entries,
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "gptg"}},
				"spec": map[string]any{
					"restartPolicy": "Never",
					// Time for gptg to save a checkpoint after SIGTERM.
					"terminationGracePeriodSeconds": 120,
					"containers": []any{map[string]any{
						"name":       "gptg",
						"image":      image,
						"workingDir": o.MountPath,
						"command":    command,
						"env":        env,
						"resources": map[string]any{
							"requests": map[string]any{"cpu": cpu, "memory": mem},
							"limits":   map[string]any{"cpu": cpu, "memory": mem},
						},
						"volumeMounts": []any{map[string]any{"name": "work", "mountPath": o.MountPath}},
					}},
					"volumes": []any{map[string]any{
						"name":                  "work",
						"persistentVolumeClaim": map[string]any{"claimName": o.Claim},
					}},
				},
			},
		},
	}
}
