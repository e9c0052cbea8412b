package apiserver

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"

	"github.com/batchlet/batchlet/apiserver/patch"
	"github.com/batchlet/batchlet/apiserver/registry"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func (s *Server) handlePatch(w http.ResponseWriter, r *http.Request, info requestInfo, mode updateMode) {
	res := info.Res
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	pt := types.PatchType(mt)
	if err := patch.Check(res, pt, info.Name); err != nil {
		s.writeError(w, err)
		return
	}
	if pt == types.ApplyPatchType {
		s.handleApply(w, r, info, mode)
		return
	}
	body, err := s.readBody(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	p, err := patch.Parse(pt, body)
	if err != nil {
		s.writeError(w, err)
		return
	}
	codec := patch.Codec{
		CurrentJSON: func(cur runtime.Object) ([]byte, error) { return s.currentJSON(res, cur) },
		Decode: func(data []byte, into runtime.Object) error {
			return s.decodeJSON(w, r, data, res.GVK(), into)
		},
	}
	// patch.Apply only reads cur, but the typed merge shares cur's unpatched
	// parts with its result.
	share := mayShare(r.Context(), mode)
	out, err := s.updateReading(r.Context(), res, info.Namespace, info.Name, mode, isDryRun(r), func(cur runtime.Object) (runtime.Object, error) {
		if !share {
			cur = cur.DeepCopyObject()
		}
		return patch.Apply(res, p, cur, codec)
	})
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeObject(w, r, res, http.StatusOK, out)
}

// currentJSON is the served JSON of cur, an object as read from the store
// (its resourceVersion is its stored revision): shared with the watches
// that already encoded that version.
func (s *Server) currentJSON(res *registry.Resource, cur runtime.Object) ([]byte, error) {
	m := accessor(cur)
	rev, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return json.Marshal(cur)
	}
	key := objKey{viewOf(res), objectKey(res, m.GetNamespace(), m.GetName())}
	ent, err := s.entCache.get(key, rev, func() (*storedEntry, error) {
		data, err := json.Marshal(cur)
		if err != nil {
			return nil, err
		}
		return &storedEntry{data: data, labels: m.GetLabels()}, nil
	})
	if err != nil {
		return nil, err
	}
	return ent.data, nil
}
