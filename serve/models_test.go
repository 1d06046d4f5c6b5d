package serve

import (
	"testing"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/savedmodel"
)

// TestReplacedWhileLoading: a run's model file replaced (train writes it
// at every evaluation) while its old version is still being read. The old
// version's request is served and then the old weights leave the budget:
// counted for good, the leaked versions would fill the model memory and a
// watched training end in 503s.
func TestReplacedWhileLoading(t *testing.T) {
	fixtures(t)
	first := make(chan struct{}) // the first load reads until this closes
	loading := make(chan struct{})
	calls := 0
	open := func(path string) (*savedmodel.Model, error) {
		calls++
		if calls == 1 {
			close(loading)
			<-first
		}
		return savedmodel.Load(path)
	}
	c := newModelCache(1<<30, "", open, graph.Backend{Threads: 1})
	old, newer := fileKey{size: 1, mtime: 1}, fileKey{size: 1, mtime: 2}

	type got struct {
		release func()
		err     error
	}
	done := make(chan got)
	go func() {
		_, release, err := c.sampler(causalModelFile, old)
		done <- got{release, err}
	}()
	<-loading // the old version is being read, its entry in the cache
	_, releaseNew, err := c.sampler(causalModelFile, newer)
	if err != nil {
		t.Fatal(err)
	}
	releaseNew()
	withNew, _ := c.usage()
	close(first)
	g := <-done
	if g.err != nil {
		t.Fatal(g.err)
	}
	g.release()
	used, n := c.usage()
	if n != 1 || used != withNew {
		t.Errorf("after the old version's request: %d models, %d bytes held; want 1 and %d (the new version's alone)", n, used, withNew)
	}
	// Many versions in turn, each replaced while the last loads: the budget
	// stays what one version takes.
	for v := int64(3); v < 8; v++ {
		_, release, err := c.sampler(causalModelFile, fileKey{size: 1, mtime: v})
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	if used, n := c.usage(); n != 1 || used != withNew {
		t.Errorf("after five more versions: %d models, %d bytes; want 1 and %d", n, used, withNew)
	}
}
