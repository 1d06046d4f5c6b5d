package corpus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gptg/gptg/corpus/builtin"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
)

// downloadTimeout bounds a download with the default client; the corpus
// gptg ships a config for is 1 MB.
const downloadTimeout = 5 * time.Minute

// Ensure makes sure the data file is in place before training starts.
//
// A built-in corpus ("builtin:NAME") is always in place; it is checked
// against sum (when set) like a file.
//
// When path exists and sum (a hex SHA-256) is set, the file must match it.
// When path is missing it is downloaded from rawURL (a nil client means one
// with downloadTimeout), checked against sum when set, and only then written,
// so an interrupted or corrupt download never leaves a file that a later
// run would trust. Ensure prints nothing; every failure is one error line
// that says what to do.
func Ensure(path, rawURL, sum string, client *http.Client) error {
	return EnsureContext(context.Background(), path, rawURL, sum, client)
}

// EnsureContext is Ensure that stops when ctx is done (Ctrl-C during a
// download, or while a large file is checked against sum), returning an
// error that wraps ctx's; nothing is written then.
func EnsureContext(ctx context.Context, path, rawURL, sum string, client *http.Client) error {
	sum = strings.ToLower(strings.TrimSpace(sum))
	if sum != "" {
		if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
			return fmt.Errorf("[data] sha256 %q is not 64 hex digits", sum)
		}
	}
	if name, ok := builtin.Parse(path); ok {
		c, ok := builtin.Lookup(name)
		switch {
		case !ok:
			return unknownBuiltin(name)
		case sum != "" && c.SHA256 != sum:
			return fmt.Errorf("the built-in corpus %s has sha256 %s, but [data] sha256 expects %s", path, c.SHA256, sum)
		}
		return nil // nothing to download, nothing to read to check it
	}
	info, err := os.Stat(path)
	switch {
	case err == nil && info.IsDir():
		return fmt.Errorf("data file %s is a directory", quote.Name(path))
	case err == nil && !info.Mode().IsRegular():
		// Checked before the checksum opens it: opening a FIFO blocks.
		f, _, err := openText(path)
		if err == nil {
			f.Close()
		}
		return err
	case err == nil:
		return verifyFile(ctx, path, sum)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("data file %s: %w", quote.Name(path), pathless(err))
	case rawURL == "":
		return fmt.Errorf("data file %s does not exist and [data] url is not set", quote.Name(path))
	}
	if client == nil {
		// A bound on the whole download: a network that drops packets
		// silently would otherwise hang gptg with no word.
		client = &http.Client{Timeout: downloadTimeout}
	}
	if err := download(ctx, path, rawURL, sum, client); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("downloading %s: %w", rawURL, ctx.Err())
		}
		return fmt.Errorf("downloading %s failed: %v; put the file at %s", rawURL, err, path)
	}
	return nil
}

// Digest returns a corpus's SHA-256 (hex) and size: a file's, or a
// built-in corpus's ("builtin:NAME"). Errors name the path.
func Digest(path string) (sum string, size int64, err error) {
	f, size, err := openText(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", 0, fmt.Errorf("data file %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), size, nil
}

// verifyFile checks an existing file against sum (when set), stopping
// between chunks when ctx is done.
func verifyFile(ctx context.Context, path, sum string) error {
	if sum == "" {
		return nil
	}
	f, _, err := openText(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, chunkSize)
	for {
		if err := ctx.Err(); err != nil {
			return dataError(path, err)
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("data file %s: %w", quote.Name(path), err)
		}
	}
	got := hex.EncodeToString(h.Sum(nil))
	if got != sum {
		return fmt.Errorf("data file %s has sha256 %s, but [data] sha256 expects %s", quote.Name(path), got, sum)
	}
	return nil
}

// maxDownload bounds what a misconfigured URL can make us write: it is
// the largest corpus Load reads.
var maxDownload int64 = MaxDataSize

// idleTimeout ends a download that has sent nothing for this long: the
// whole download's bound alone would leave a stalled server minutes of
// silence.
var idleTimeout = 30 * time.Second

// download fetches rawURL and streams it into a temporary file beside
// path (internal/atomicfile), renamed into place only once all of it came,
// it is UTF-8 text and the checksum matches: a failed download leaves
// nothing that a later run would trust, and memory stays at a chunk
// whatever the server sends.
func download(ctx context.Context, path, rawURL, sum string, client *http.Client) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stalled := fmt.Errorf("the server sent nothing for %v", idleTimeout)
	idle := time.AfterFunc(idleTimeout, func() { cancel(stalled) })
	defer idle.Stop()
	// A stall shows up as the request's context ending; say why.
	why := func(err error) error {
		if context.Cause(ctx) == stalled {
			return stalled
		}
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		// *url.Error repeats the method and URL, which the caller says already.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return why(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	if resp.ContentLength > maxDownload {
		return fmt.Errorf("the file is %d bytes, larger than a corpus can be (%d bytes)", resp.ContentLength, maxDownload)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	body := &watchedBody{r: resp.Body, idle: idle}
	h := sha256.New()
	err = atomicfile.Write(path, func(w io.Writer) error {
		err := eachChunk(ctx, body, func(chunk []byte) error {
			h.Write(chunk)
			_, err := w.Write(chunk)
			return err
		})
		switch {
		case err != nil && body.n > maxDownload:
			return fmt.Errorf("the file is larger than a corpus can be (%d bytes)", maxDownload)
		case errors.Is(err, ErrNotUTF8):
			return fmt.Errorf("the server sent no text: %v", err)
		case err != nil:
			return fmt.Errorf("after %d bytes: %w", body.n, why(err))
		case body.n == 0:
			return errors.New("the server sent an empty file")
		}
		if got := hex.EncodeToString(h.Sum(nil)); sum != "" && got != sum {
			return fmt.Errorf("the downloaded file has sha256 %s, but [data] sha256 expects %s", got, sum)
		}
		return nil
	})
	return err
}

// watchedBody counts what a download has read, restarts the idle timer
// on every byte and stops one byte past maxDownload.
type watchedBody struct {
	r    io.Reader
	n    int64
	idle *time.Timer
}

var errTooLarge = errors.New("too large")

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.idle.Reset(idleTimeout)
	}
	b.n += int64(n)
	if b.n > maxDownload {
		return n, errTooLarge
	}
	return n, err
}
