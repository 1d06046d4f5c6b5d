package sweep

import (
	"strings"
	"testing"
)

// TestSlurmScriptRanks: with Ranks each array task is a job of that many
// tasks, memory asked per CPU (a node may hold several ranks), and the
// entry is run with --ranks; without, one task and --mem as before.
func TestSlurmScriptRanks(t *testing.T) {
	b, err := Slurm("/data/sw", 2, SlurmOptions{CPUs: 4, Gptg: "/opt/gptg", Workdir: "/data", MemoryMiB: 6000, Ranks: 8})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"#SBATCH --ntasks=8\n", "#SBATCH --cpus-per-task=4\n", "#SBATCH --mem-per-cpu=1500M\n",
		"exec /opt/gptg sweep run /data/sw --ranks 8\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "#SBATCH --mem=") {
		t.Errorf("a job of ranks asks --mem, which is per node:\n%s", s)
	}
	b, err = Slurm("/data/sw", 2, SlurmOptions{CPUs: 4, Gptg: "/opt/gptg", Workdir: "/data", MemoryMiB: 6000})
	if s := string(b); err != nil || !strings.Contains(s, "#SBATCH --ntasks=1\n") || !strings.Contains(s, "#SBATCH --mem=6000M\n") ||
		strings.Contains(s, "--ranks") {
		t.Errorf("one rank: %v\n%s", err, s)
	}
}
