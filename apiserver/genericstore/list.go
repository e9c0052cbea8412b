package genericstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// continueToken is the opaque pagination state.
type continueToken struct {
	Rev   int64  `json:"rv"`
	Start string `json:"start"`
}

func encodeContinue(rev int64, lastKey string) string {
	b, _ := json.Marshal(continueToken{Rev: rev, Start: lastKey})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.Rev <= 0 {
		return t, apierrors.NewBadRequest("continue key is not valid: invalid continue token")
	}
	return t, nil
}

// ListResult is one page of matching objects: their stored versions, and
// for each its decoded object (nil where nothing decoded it yet; listObjects
// fills them all).
type ListResult struct {
	KVs   []storage.KeyValue
	Items []runtime.Object
	// Rev is the revision the list is of; Cont and Remaining continue it.
	Rev       int64
	Cont      string
	Remaining *int64
}

// List lists res in namespace honouring selectors, limit, continue
// and resourceVersion semantics, with every item decoded (and owned by the
// caller).
func (s *Store) List(ctx context.Context, res *registry.Resource, namespace string, f *Filter, limit int64, cont, rv, rvMatch string) (*ListResult, error) {
	lr, err := s.ListStored(ctx, res, namespace, f, limit, cont, rv, rvMatch)
	if err != nil {
		return nil, err
	}
	if err := s.DecodeItems(res, lr); err != nil {
		return nil, err
	}
	return lr, nil
}

// ListStored is List without decoding what the selectors did not
// need.
func (s *Store) ListStored(ctx context.Context, res *registry.Resource, namespace string, f *Filter, limit int64, cont, rv, rvMatch string) (*ListResult, error) {
	sc := newListScan(s, res, f, limit, false)
	if err := s.runScan(ctx, sc, namespace, cont, rv, rvMatch); err != nil {
		return nil, err
	}
	out := &ListResult{Rev: sc.rev, Cont: sc.cont, Remaining: sc.remaining, KVs: make([]storage.KeyValue, len(sc.items)), Items: make([]runtime.Object, len(sc.items))}
	for i, it := range sc.items {
		out.KVs[i], out.Items[i] = it.st.kv, it.st.obj
	}
	return out, nil
}

// ListEntries is ListStored for an answer spliced from cached entries: it
// copies out of the store only the versions the entry cache misses.
// Each of its items has its entry.
func (s *Store) ListEntries(ctx context.Context, res *registry.Resource, namespace string, f *Filter, limit int64, cont, rv, rvMatch string) ([]ListItem, metav1.ListMeta, error) {
	sc := newListScan(s, res, f, limit, true)
	if err := s.runScan(ctx, sc, namespace, cont, rv, rvMatch); err != nil {
		return nil, metav1.ListMeta{}, err
	}
	return sc.items, sc.listMeta(), nil
}

// runScan runs sc over namespace with the continue and resourceVersion
// parameters of a list.
func (s *Store) runScan(ctx context.Context, sc *listScan, namespace, cont, rv, rvMatch string) error {
	opts, err := s.listOptions(ctx, cont, rv, rvMatch)
	if err != nil {
		return err
	}
	return sc.run(ctx, KeyPrefix(sc.res, namespace), opts, cont != "")
}

// DecodeItems decodes the items of lr no selector decoded.
func (s *Store) DecodeItems(res *registry.Resource, lr *ListResult) error {
	for i, obj := range lr.Items {
		if obj != nil {
			continue
		}
		var err error
		if lr.Items[i], err = decodeKV(res, lr.KVs[i]); err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	return nil
}

// MetadataItems is DecodeItems for a reader of the items' metadata alone
// (a metadata-only list): a version whose metadata reads alone (see
// MetadataOf: a custom resource's) gets that read-only object, without
// decoding and defaulting it whole; the others are decoded.
func (s *Store) MetadataItems(res *registry.Resource, lr *ListResult) error {
	for i, obj := range lr.Items {
		if obj != nil {
			continue
		}
		md, ok, err := s.MetadataOf(res, lr.KVs[i])
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		if ok {
			lr.Items[i] = md
		}
	}
	return s.DecodeItems(res, lr)
}

// ListMeta is the list metadata of lr.
func (lr *ListResult) ListMeta() metav1.ListMeta {
	return metav1.ListMeta{ResourceVersion: strconv.FormatInt(lr.Rev, 10), Continue: lr.Cont, RemainingItemCount: lr.Remaining}
}

func (sc *listScan) listMeta() metav1.ListMeta {
	return metav1.ListMeta{ResourceVersion: strconv.FormatInt(sc.rev, 10), Continue: sc.cont, RemainingItemCount: sc.remaining}
}

// WriteList answers with a list of items: the list envelope encoded with
// no items, and the items spliced in from their cached encoded form. An
// error means nothing was written: the caller answers with it.
func (s *Store) WriteList(w http.ResponseWriter, res *registry.Resource, items []ListItem, lm metav1.ListMeta) error {
	lw, err := newListWriter(res, lm)
	if err == nil {
		for _, it := range items {
			if err = lw.check(it.ent); err != nil {
				break
			}
		}
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	lw.begin(w, s.listBuffer(w))
	for _, it := range items {
		lw.item(it.ent)
	}
	s.releaseListBuffer(lw.end())
	return nil
}

// listWriter writes a list answer: the envelope of an empty list (encoded
// by the resource's own list type) with the items spliced in, through a
// buffer of listBuffer's.
type listWriter struct {
	env    []byte // the empty list's JSON less its closing `]}`
	prefix []byte // see itemPrefix
	bw     *bufio.Writer
	n      int
}

func newListWriter(res *registry.Resource, lm metav1.ListMeta) (*listWriter, error) {
	if res.CustomResource {
		return customListWriter(res, lm)
	}
	list, err := emptyList(res, lm)
	if err != nil {
		return nil, err
	}
	env, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	const emptyItems = `"items":[]}`
	if !bytes.HasSuffix(env, []byte(emptyItems)) {
		return nil, fmt.Errorf("unexpected %s list encoding", res.Kind)
	}
	return &listWriter{env: env[:len(env)-2], prefix: itemPrefix(res)}, nil
}

// customListWriter is newListWriter for custom resources, whose
// unstructured list encodes its fields in sorted order, items not last.
func customListWriter(res *registry.Resource, lm metav1.ListMeta) (*listWriter, error) {
	env, err := json.Marshal(struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   metav1.ListMeta `json:"metadata"`
		Items      []struct{}      `json:"items"`
	}{res.GroupVersion().String(), res.Kind + "List", lm, []struct{}{}})
	if err != nil {
		return nil, err
	}
	return &listWriter{env: env[:len(env)-2], prefix: itemPrefix(res)}, nil
}

// check says whether ent can be spliced in.
func (lw *listWriter) check(ent *StoredEntry) error {
	if !bytes.HasPrefix(ent.data, lw.prefix) {
		return fmt.Errorf("unexpected encoding %.40q", ent.data)
	}
	return nil
}

// begin starts the answer on w through bw, a buffer writing to w.
func (lw *listWriter) begin(w http.ResponseWriter, bw *bufio.Writer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	lw.bw = bw
	_, _ = lw.bw.Write(lw.env)
}

// item writes ent, which passed check.
func (lw *listWriter) item(ent *StoredEntry) {
	if lw.n > 0 {
		_ = lw.bw.WriteByte(',')
	}
	lw.n++
	writeListItem(lw.bw, lw.prefix, ent.data)
}

// end closes the answer and returns its buffer.
func (lw *listWriter) end() *bufio.Writer {
	_, _ = lw.bw.WriteString("]}\n")
	_ = lw.bw.Flush()
	return lw.bw
}

// listBuffer returns a 64 KB buffer writing to w, which the HTTP/2
// connection sends in whole frames: one of the buffers earlier answers
// released, or a new one.
func (s *Store) listBuffer(w io.Writer) *bufio.Writer {
	if bw, ok := s.listBufs.Get().(*bufio.Writer); ok {
		bw.Reset(w)
		return bw
	}
	return bufio.NewWriterSize(w, 64<<10)
}

// releaseListBuffer hands back a buffer of a finished answer (flushed).
func (s *Store) releaseListBuffer(bw *bufio.Writer) {
	bw.Reset(nil)
	s.listBufs.Put(bw)
}

// revisionWait is how long a request naming a future resourceVersion waits
// for the store to catch up, as kube-apiserver's watch cache does.
const revisionWait = 3 * time.Second

// waitForRevision waits until the store has reached rev, or answers 504
// "Too large resource version".
func (s *Store) waitForRevision(ctx context.Context, rev int64) error {
	deadline := s.clock.Now().Add(revisionWait)
	for s.store.CurrentRevision() < rev {
		if !s.clock.Now().Before(deadline) {
			return apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rev, s.store.CurrentRevision()), 1)
		}
		select {
		case <-ctx.Done():
			return apierrors.NewTimeoutError("request canceled while waiting for resource version", 1)
		case <-s.clock.After(10 * time.Millisecond):
		}
	}
	return nil
}
